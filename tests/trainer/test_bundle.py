import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from trainer.bundle import build_bundle, package_dir, pinned_settings
from trainer.codesize import compact_form, minify, pack, shipped_form, wrap
from trainer.config import PER_RUN, load_config, record_settings
from trainer.errors import TrainerError

# Standard-library names that Python 3.10 lacks (added in 3.11 or later).
NEWER_STDLIB = {"tomllib", "wsgiref.types", "typing.Self", "typing.LiteralString", "typing.Never",
                "typing.assert_never", "typing.assert_type", "typing.reveal_type", "typing.Required",
                "typing.NotRequired", "typing.override", "typing.TypeAliasType", "enum.StrEnum",
                "enum.ReprEnum", "datetime.UTC", "asyncio.TaskGroup", "asyncio.timeout",
                "hashlib.file_digest", "itertools.batched", "contextlib.chdir"}


@pytest.fixture(scope="module")
def bundle_text():
    return build_bundle()


def _names_used(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            yield f"{node.value.id}.{node.attr}"


def test_trainer_is_python_310(bundle_text):
    for path in sorted(package_dir().glob("*.py")) + [None]:
        source = bundle_text if path is None else path.read_text()
        tree = ast.parse(source, feature_version=(3, 10))
        assert not NEWER_STDLIB.intersection(_names_used(tree)), path


def test_bundle_is_standalone(bundle_text):
    tree = ast.parse(bundle_text)
    roots = {name.split(".")[0] for name in _names_used(tree)}
    assert not {"trainer", "pgolf_cli", "audits"} & roots
    guards = [n for n in tree.body if isinstance(n, ast.If) and "__name__" in ast.unparse(n.test)]
    assert len(guards) == 1 and tree.body[-1] is guards[0]
    for module in ("config", "model", "train", "main"):
        assert f"# ---- trainer/{module}.py" in bundle_text
    assert "trainer/dataprep.py" not in bundle_text  # not imported by a run


def test_importing_the_bundle_runs_nothing(bundle_text, tmp_path):
    script = tmp_path / "train_gpt.py"
    script.write_text(bundle_text)
    probe = ("import sys, importlib.util\n"
             "for name in ('trainer', 'pgolf_cli', 'audits'): sys.modules[name] = None\n"
             f"spec = importlib.util.spec_from_file_location('train_gpt', {str(script)!r})\n"
             "module = sys.modules['train_gpt'] = importlib.util.module_from_spec(spec)\n"
             "spec.loader.exec_module(module)\n"
             "assert callable(module.main) and module.GPT and module.load_config\n")
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and sorted(p.name for p in tmp_path.iterdir()) == ["train_gpt.py"]


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    return tmp_path


MAIN = '''\
    """Entry."""
    from trainer.a import f

    def main():
        return f()

    if __name__ == "__main__":
        main()
'''


def test_modules_in_dependency_order(tmp_path):
    src = _package(tmp_path, {"main": MAIN, "a": "from trainer.b import g\n\ndef f():\n    return g()\n",
                              "b": '"""B."""\nimport os\n\ndef g():\n    return os.sep\n'})
    text = build_bundle(src)
    assert text.index("def g") < text.index("def f") < text.index("def main")
    namespace: dict = {"__name__": "bundle"}
    exec(compile(text, "bundle", "exec"), namespace)
    assert namespace["main"]() == "/"


@pytest.mark.parametrize("files, message", [
    ({"a": "def f():\n    pass\n\ndef main():\n    pass\n"}, "bind the top-level name 'main'"),
    ({"a": "from .b import g\ndef f():\n    pass\n"}, "relative imports cannot be bundled"),
    ({"a": "import trainer.b\ndef f():\n    pass\n"}, "not `import trainer.b`"),
    ({"a": "from trainer.b import g as h\ndef f():\n    pass\n", "b": "def g():\n    pass\n"},
     "`import ... as ...`"),
    ({"a": "from trainer.b import nothing\ndef f():\n    pass\n", "b": "x = 1\n"},
     "imports nothing from trainer.b, which does not define it"),
    ({"a": "from trainer.main import main\ndef f():\n    pass\n"}, "import cycle: main -> a -> main"),
    ({}, "trainer/a.py does not exist"),
])
def test_what_cannot_be_bundled_is_refused(tmp_path, files, message):
    src = _package(tmp_path, {"main": MAIN, **files})
    with pytest.raises(TrainerError, match=re.escape(message)):
        build_bundle(src)


GUARDED = '''\
    from trainer.b import g
    FAST = True
    if FAST:
        def {name}():
            mask = 1
            return mask

    def f():
        return g()
'''


def test_names_defined_in_guarded_blocks(tmp_path):
    """A function defined under `if` binds its name at top level (two such clash); the names it
    assigns inside are its own (two such do not)."""
    b = "if True:\n    def kernel_b():\n        mask = 2\n        return mask\n\ndef g():\n    return kernel_b()\n"
    src = _package(tmp_path, {"main": MAIN, "a": GUARDED.format(name="kernel_a"), "b": b})
    namespace: dict = {"__name__": "bundle"}
    exec(build_bundle(src), namespace)
    assert namespace["main"]() == 2 and namespace["kernel_a"]() == 1
    _package(tmp_path, {"a": GUARDED.format(name="kernel_b")})
    with pytest.raises(TrainerError, match="bind the top-level name 'kernel_b'"):
        build_bundle(src)


OPTIONAL = '''\
    try:
        from trainer.extra import hook
    except ModuleNotFoundError as exc:
        if exc.name != "trainer.extra":
            raise
        hook = None

    def main():
        return hook
'''


def test_an_optional_module_is_bundled_when_present(tmp_path):
    src = _package(tmp_path, {"main": OPTIONAL})
    namespace: dict = {}
    exec(build_bundle(src), namespace)
    assert namespace["main"]() is None
    _package(tmp_path, {"extra": "def hook():\n    return 1\n"})
    namespace = {}
    exec(build_bundle(src), namespace)
    assert namespace["main"]()() == 1


def test_the_real_bundle_runs_from_any_folder(bundle_text, tmp_path):
    """Bad input in a bundled run: the same one-line error as the package."""
    script = tmp_path / "train_gpt.py"
    script.write_text(bundle_text)
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin", "PRESET": "tiny", "DATA_DIR": str(tmp_path)})
    assert result.returncode == 2 and result.stderr.startswith("train_gpt: data folder ")


def test_what_a_run_never_reads_is_left_out(bundle_text):
    tree = ast.parse(bundle_text)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    undecorated = [f for f in functions if not f.decorator_list]
    assert undecorated and not any(
        f.returns or any(a.annotation for a in f.args.args + f.args.kwonlyargs) for f in undecorated)
    # custom_op and triton.jit read their annotations: kept.
    [op] = [f for f in functions if f.name == "softcap_ce_rows"]
    assert op.decorator_list and op.returns is not None and op.args.args[0].annotation is not None
    # A setting's reason is only listed by `pgolf train --list-settings`, from the package.
    assert "    seed: int = knob(1337, \"\")\n" in bundle_text
    assert "Seeds the weights" not in bundle_text


FOLDED = '''\
    from trainer.extras import EXTRAS

    PINNED: dict = {}

    def show():
        return "shown"

    def helper_on():
        return "on"

    def helper_off():
        return "off"

    def chosen(cfg, seen):
        if EXTRAS:
            seen.append(show())
        if cfg.feature and cfg.level >= 2:
            return helper_on()
        elif cfg.mode == "x":
            return "x"
        else:
            return helper_off()

    TABLE = {"x": 10, "y": 20}

    def width(cfg):
        return (1 if not cfg.feature else 2) + len(() if cfg.feature else (0,)) + TABLE[cfg.mode]

    def undecided(run, x):
        if x is not None and run.cfg.feature:
            return 3
        elif EXTRAS and x == 0:  # an `elif` decided after an undecided test goes too
            return show()
        return 4

    def dropped(cfg):
        return 5 if cfg.other else 6

    def after_return():
        return "after"

    def early(cfg):
        if cfg.feature:
            return "early"
        return after_return()

    def f(cfg, seen):
        return (chosen(cfg, seen), width(cfg), undecided(cfg, None), early(cfg)), PINNED
'''


def _run_bundle(text, **cfg):
    namespace: dict = {"__name__": "bundle"}
    exec(compile(text, "bundle", "exec"), namespace)
    seen: list = []
    config = type("Cfg", (), {"cfg": None, **cfg})()
    values, pinned = namespace["f"](config, seen)
    return values, seen, pinned


MAIN_F = MAIN.replace("return f()", "return f")


def test_record_bundle_folds_settings_and_extras(tmp_path):
    src = _package(tmp_path, {"main": MAIN_F, "a": FOLDED, "extras": "EXTRAS = True\n"})
    cfg = {"feature": True, "level": 3, "mode": "y", "other": False}
    full = build_bundle(src)
    assert _run_bundle(full, **cfg) == (("on", 22, 4, "early"), ["shown"], {})
    record = build_bundle(src, settings=cfg)
    # EXTRAS is False: `show` is left out; the branch taken stays, the others and what only they
    # reached go; `TABLE[cfg.mode]` is the entry picked; only the settings that decided a kept
    # fold are pinned (`other` is read only in `dropped`, which nothing calls).
    assert _run_bundle(record, **cfg) == (("on", 22, 4, "early"), [],
                                          {"feature": True, "level": 3, "mode": "y"})
    # Nothing after a folded-in return: `after_return` is named only there.
    for gone in ("def show", "def helper_off", "EXTRAS", '"x"', "def dropped", "after_return", "TABLE"):
        assert gone not in record, gone
    assert re.search(r"if \w+ is not None and \w+\.cfg\.feature:", record)  # not decided by settings alone
    assert "elif" not in record.split("def undecided")[1].split("def ")[0]
    off = {**cfg, "feature": False, "mode": "x"}
    record = build_bundle(src, settings=off)
    assert _run_bundle(record, **off) == (("x", 12, 4, "after"), [], {"feature": False, "mode": "x"})
    assert "def helper_on" not in record and "def helper_off" not in record
    assert "is not None" not in record  # `... and False` is falsy whatever x is


def test_record_bundle_keeps_what_runs_when_defined(tmp_path):
    """Decorated definitions and statements with effects are kept even when nothing names them;
    a definition only a pure decorator wraps (a dataclass) is not."""
    a = ('import dataclasses\nimport functools\n\nREGISTRY = []\n\ndef register(fn):\n'
         '    REGISTRY.append(fn.__name__)\n    return fn\n\n@register\ndef hook():\n    pass\n\n'
         '@dataclasses.dataclass\nclass Unused:\n    x: int = 0\n\nprint("loaded")\n\n'
         'def f(cfg, seen):\n    return REGISTRY\n')
    src = _package(tmp_path, {"main": MAIN_F, "a": a + "PINNED: dict = {}\n"})
    record = build_bundle(src, settings={})
    assert "import functools" not in record and "def hook" in record and 'print("loaded")' in record
    assert "class Unused" not in record and "import dataclasses" not in record
    assert "class Unused" in build_bundle(src)


@pytest.fixture(scope="module")
def record_text():
    return build_bundle(settings=record_settings(load_config({})))


def test_the_record_bundle_is_the_trainer_less_what_the_record_never_runs(bundle_text, record_text):
    tree = ast.parse(record_text, feature_version=(3, 10))
    roots = {name.split(".")[0] for name in _names_used(tree)}
    assert not {"trainer", "pgolf_cli", "audits"} & roots
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    full = {n.name for n in ast.parse(bundle_text).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert defined < full
    # The live display, the repeated preflight and COMPRESSOR=best are left out; the run's own
    # path (training, GPTQ, fitting the cap, sliding and TTT evaluation) is there.
    assert {"start_progress", "preflight", "_validate", "_best_method"} <= full - defined
    assert {"train", "quantize_gptq", "fit_to_budget", "eval_ttt", "find_data", "main"} <= defined
    pinned = pinned_settings(record_text)
    assert pinned["ttt_enabled"] is True and pinned["compressor"] == "brotli"
    assert not PER_RUN & set(pinned)  # the seeds of one submission share one file
    assert pinned_settings(bundle_text) == {}
    assert build_bundle(settings=pinned) == record_text  # what the audit's probe rebuilds
    # Written minified, it counts itself as it is and holds no minifier.
    assert minify(record_text) == record_text and compact_form(record_text) == wrap(record_text)
    assert shipped_form(record_text) == pack(record_text)
    assert "def minify" not in record_text and "def minify" in bundle_text
    # A setting's reason and choices are read only by the package and the extras: plain defaults.
    assert "knob" not in record_text and "seed:int=1337\n" in record_text
    assert len(compact_form(record_text)) < len(compact_form(bundle_text))


@pytest.mark.parametrize("name, value, built", [
    ("TTT_ENABLED", "0", "False: this train_gpt.py was built for True"),
    ("SMEAR_GATE_ENABLED", "1", "True: this train_gpt.py was built for False"),
    ("SPARSE_ATTN_GATE_ENABLED", "1", "True: this train_gpt.py was built for False"),
    ("LQER_ENABLED", "1", "True: this train_gpt.py was built for False"),
    ("PRESET", "tiny", "tiny: this train_gpt.py was built for record"),
])
def test_the_record_bundle_refuses_another_value_of_a_pinned_setting(record_text, tmp_path,
                                                                     name, value, built):
    """Before anything runs: the record's file holds neither the gates nor LQER."""
    script = tmp_path / "train_gpt.py"
    script.write_text(record_text)
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin", name: value})
    assert result.returncode == 2
    assert result.stderr == (f"train_gpt: {name}={built} and holds only that code; pgolf train "
                             "builds one for these settings\n")


def test_the_gates_and_lqer_ship_only_where_their_settings_are_on(bundle_text, record_text):
    """No list of optional modules: code under `if cfg.lqer_enabled:` folds away in the record
    bundle and what only it reached (trainer/gates.py, trainer/lqer.py) is dropped with it."""
    frontier = build_bundle(settings=record_settings(load_config({"PRESET": "frontier"})))
    smear_only = build_bundle(settings=record_settings(load_config({"SMEAR_GATE_ENABLED": "1"})))
    defs = ("class SmearGate(", "class HeadGate(", "def lqer_corrections(", "def fold_corrections(")
    assert [d in record_text for d in defs] == [False] * 4
    assert [d in frontier for d in defs] == [True] * 4 and all(d in bundle_text for d in defs)
    assert [d in smear_only for d in defs] == [True, False, False, False]
    assert pinned_settings(frontier)["lqer_enabled"] is True
    # Of the presets, each holds its own only: the record's is empty, the frontier's has the gates.
    assert '"record":{}' in record_text and '"frontier":{' not in record_text
    assert '"frontier":{' in frontier and '"tiny":{' not in frontier and '"tiny": {' in bundle_text
    assert list(pinned_settings(frontier))[0] == "preset"

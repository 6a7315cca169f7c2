"""The verdicts the Python 3.10 oracle gives, as plain Python: oracle310.cjs runs this file in
CPython 3.10 (pyodide), and the tests run `judge_name` in the host Python too, so both judge a
name the same way."""

import builtins
import importlib
import warnings


def judge_compile(src):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(src, "<snippet>", "exec", dont_inherit=True)
    except SyntaxError as e:
        return {"ok": False, "msg": e.msg, "line": e.lineno, "offset": e.offset}
    except (ValueError, MemoryError, RecursionError) as e:
        return {"ok": False, "msg": type(e).__name__ + ": " + str(e), "line": None, "offset": None}
    return {"ok": True}


def judge_name(name):
    parts = name.split(".")
    if len(parts) == 1 and hasattr(builtins, name):
        return True
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
            break
        except ImportError:
            continue
    else:
        return False
    for attr in parts[i:]:
        if not hasattr(obj, attr):
            return False
        obj = getattr(obj, attr)
    return True

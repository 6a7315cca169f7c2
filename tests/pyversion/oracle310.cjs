// The Python 3.10 oracle: a real CPython 3.10 (pyodide 0.22.1, WebAssembly) under Node.
// Usage: node oracle310.cjs compile SNIPPETS.json   -> one compile verdict per source string
//        node oracle310.cjs names NAMES.json        -> whether each dotted stdlib name exists
// Prints {"version": ..., "verdicts": [...]}. Needs `npm install --no-save pyodide@0.22.1`.
const fs = require("fs");
const { loadPyodide } = require("pyodide");

const JUDGES = {
  compile: `
import warnings

def judge(src):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(src, "<snippet>", "exec", dont_inherit=True)
    except SyntaxError as e:
        return {"ok": False, "msg": e.msg, "line": e.lineno, "offset": e.offset}
    except (ValueError, MemoryError, RecursionError) as e:
        return {"ok": False, "msg": type(e).__name__ + ": " + str(e), "line": None, "offset": None}
    return {"ok": True}
`,
  names: `
import builtins, importlib

def judge(name):
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
`,
};

(async () => {
  const [mode, path] = process.argv.slice(2);
  if (!(mode in JUDGES) || !path) throw new Error("usage: node oracle310.cjs compile|names FILE.json");
  const py = await loadPyodide();
  py.globals.set("ITEMS", fs.readFileSync(path, "utf8"));
  py.runPython(JUDGES[mode]);
  const out = py.runPython(
    'import json, sys\njson.dumps({"version": sys.version.split()[0], "verdicts": [judge(x) for x in json.loads(ITEMS)]})');
  process.stdout.write(out + "\n");
})().catch((err) => { console.error(`oracle310: ${err.message}`); process.exit(2); });

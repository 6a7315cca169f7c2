// The Python 3.10 oracle: compiles each snippet with a real CPython 3.10 (pyodide, WebAssembly)
// and prints one verdict per snippet. Usage: node oracle310.cjs SNIPPETS.json > VERDICTS.json
// where SNIPPETS.json is a JSON list of source strings. Needs `npm install pyodide@0.22.1`.
const fs = require("fs");
const { loadPyodide } = require("pyodide");

const JUDGE = `
import json, sys, warnings

def verdict(src):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(src, "<snippet>", "exec", dont_inherit=True)
    except SyntaxError as e:
        return {"ok": False, "msg": e.msg, "line": e.lineno, "offset": e.offset}
    except (ValueError, MemoryError, RecursionError) as e:
        return {"ok": False, "msg": type(e).__name__ + ": " + str(e), "line": None, "offset": None}
    return {"ok": True}

json.dumps({"version": sys.version.split()[0], "verdicts": [verdict(s) for s in json.loads(SOURCES)]})
`;

(async () => {
  const sources = fs.readFileSync(process.argv[2], "utf8");
  const py = await loadPyodide();
  py.globals.set("SOURCES", sources);
  process.stdout.write(py.runPython(JUDGE) + "\n");
})().catch((err) => { console.error(`oracle310: ${err.message}`); process.exit(2); });

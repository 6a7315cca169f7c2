// The Python 3.10 oracle: a real CPython 3.10 (pyodide 0.22.1, WebAssembly) under Node.
// Usage: node oracle310.cjs compile SNIPPETS.json   -> one compile verdict per source string
//        node oracle310.cjs names NAMES.json        -> whether each dotted stdlib name exists
// Prints {"version": ..., "verdicts": [...]}. Needs `npm install --no-save pyodide@0.22.1`.
const fs = require("fs");
const path = require("path");
const { loadPyodide } = require("pyodide");

// Each mode names its judge in oracle310_judges.py, which runs inside the 3.10 interpreter.
const JUDGES = { compile: "judge_compile", names: "judge_name" };
const JUDGE_SOURCE = fs.readFileSync(path.join(__dirname, "oracle310_judges.py"), "utf8");

(async () => {
  const [mode, file] = process.argv.slice(2);
  if (!(mode in JUDGES) || !file) throw new Error("usage: node oracle310.cjs compile|names FILE.json");
  const py = await loadPyodide();
  py.globals.set("ITEMS", fs.readFileSync(file, "utf8"));
  py.runPython(JUDGE_SOURCE);
  const out = py.runPython(
    'import json, sys\njson.dumps({"version": sys.version.split()[0], "verdicts": [' + JUDGES[mode] + '(x) for x in json.loads(ITEMS)]})');
  process.stdout.write(out + "\n");
})().catch((err) => { console.error(`oracle310: ${err.message}`); process.exit(2); });

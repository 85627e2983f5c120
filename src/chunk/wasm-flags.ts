import { setFlagsFromString } from 'node:v8';

/**
 * V8's handling of the grammars' WebAssembly, set before tree-sitter's runtime and a grammar are compiled (V8's flags
 * are the process's, so every parse worker shares them; docs/benchmarks.md, "The grammars' optimising compiler").
 *
 * A grammar's lexer is one function of up to 600 kB of WebAssembly (Swift's 400 kB, C++'s 590 kB). V8 runs a function
 * first as baseline code and recompiles the hot ones with its optimising compiler on background threads, and these
 * functions are the hottest. On V8 11 (Node 20) that recompilation took ~20% of a large index run's CPU; without
 * V8's WebAssembly-specific optimisations (`--no-wasm-opt`) it takes less than half as long, and the parse runs as
 * fast. V8 12 (Node 22) gains nothing from it, so it is left alone there.
 */
const v8Major = Number(process.versions.v8.split('.')[0]);
let tuned = false;

/** Called once before web-tree-sitter loads. */
export function tuneWasmCompiler(): void {
  if (tuned) return;
  tuned = true;
  if (v8Major === 11) setFlagsFromString('--no-wasm-opt');
}

/**
 * Grammars whose WebAssembly this V8 cannot run: their files are chunked by lines. On V8 13 (Node 24.21), optimising
 * the Swift grammar's lexer ends the whole process ("Fatal process out of memory: Zone"), whatever flag is set but
 * `--liftoff-only`, which V8 13 ignores once the process runs. Later versions are treated alike until one is measured.
 */
export function grammarUnsupported(grammar: string, major = v8Major): boolean {
  return grammar === 'swift' && major >= 13;
}

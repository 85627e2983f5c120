/**
 * Known faults in the WebAssembly grammars quarry loads, mended in the module's bytes before it is instantiated.
 *
 * tree-sitter-wasms' Swift grammar (tree-sitter-swift 0.4) makes its scanner's state with `calloc(0, sizeof(state))`:
 * no bytes are cleared, and the scanner never sets its one field (how many `#` the raw string being read has) before
 * it reads it. In a fresh WebAssembly heap that memory is zero, so the first Swift file of a process parses as the
 * grammar means. After any other parse the block comes from malloc's free lists, and the field holds a free-list
 * pointer: every token then looks for the end of a raw string of millions of `#`. That made Swift parses 3–10× slower
 * in a long-lived parse worker (RxSwift's generated `main.swift`: 0.3 s in a new process, past the 3 s deadline after
 * any other file) and gave files with raw strings (`#"…"#`) error trees.
 *
 * The fix asks for `calloc(1, sizeof(state))`, which clears it: one byte of the function's body, changed only when the
 * body is exactly the one expected, so a different build (QUARRY_GRAMMAR_DIR, a newer package) is left as it is.
 */

interface Fix {
  /** The exported function whose body is mended. */
  fn: string;
  /** The body as built (locals, code), and the byte to set at an offset into it. */
  body: readonly number[];
  at: number;
  value: number;
  /** The imported function the body calls (its index is the body's byte at `call`), by name. */
  call: number;
  callee: string;
}

const FIXES: Record<string, Fix> = {
  // (func (result i32) (call $calloc (i32.const 0) (i32.const 4))) → (i32.const 1)
  swift: {
    fn: 'tree_sitter_swift_external_scanner_create',
    body: [0x00, 0x41, 0x00, 0x41, 0x04, 0x10, 0x00, 0x0b],
    at: 2,
    value: 0x01,
    call: 6,
    callee: 'calloc',
  },
};

/** The grammar's module, mended where FIXES names a fault in it; the same bytes when there is nothing to mend. */
export function fixGrammar(grammar: string, bytes: Uint8Array): Uint8Array {
  const fix = FIXES[grammar];
  if (!fix) return bytes;
  const body = functionBody(bytes, fix.fn);
  if (!body || body.size !== fix.body.length) return bytes;
  for (let i = 0; i < fix.body.length; i++) if (bytes[body.offset + i] !== fix.body[i]) return bytes;
  if (body.imports[fix.body[fix.call]!] !== fix.callee) return bytes;
  const out = Uint8Array.from(bytes);
  out[body.offset + fix.at] = fix.value;
  return out;
}

/**
 * Where an exported function's body (its locals and code) lies in a WebAssembly module, with the names of the
 * functions the module imports (by function index), or undefined.
 */
export function functionBody(
  bytes: Uint8Array,
  name: string,
): { offset: number; size: number; imports: string[] } | undefined {
  let p = 8; // magic and version
  const leb = (): number => {
    let result = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = bytes[p++]!;
      result += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80 && p < bytes.length);
    return result;
  };
  const readName = (): string => {
    const n = leb();
    const text = new TextDecoder().decode(bytes.subarray(p, p + n));
    p += n;
    return text;
  };
  const skipLimits = (): void => {
    const flags = leb();
    leb();
    if (flags & 1) leb();
  };
  const imports: string[] = [];
  let index = -1;
  let code = -1;
  try {
    while (p < bytes.length) {
      const id = bytes[p++]!;
      const size = leb();
      const end = p + size;
      if (id === 2) {
        // imports: only functions take a function index
        for (let n = leb(); n > 0; n--) {
          readName();
          const field = readName();
          const kind = bytes[p++]!;
          if (kind === 0) {
            leb();
            imports.push(field);
          } else if (kind === 1) {
            p++; // table's element type
            skipLimits();
          } else if (kind === 2) {
            skipLimits();
          } else if (kind === 3) {
            p += 2; // a global's type and mutability
          } else if (kind === 4) {
            p++; // a tag's attribute
            leb();
          } else {
            return undefined;
          }
        }
      } else if (id === 7) {
        for (let n = leb(); n > 0; n--) {
          const exported = readName();
          const kind = bytes[p++]!;
          const at = leb();
          if (kind === 0 && exported === name) index = at;
        }
      } else if (id === 10) code = p;
      p = end;
    }
    if (index < imports.length || code < 0) return undefined;
    p = code;
    const count = leb();
    for (let i = 0; i < count; i++) {
      const size = leb();
      if (i === index - imports.length) return { offset: p, size, imports };
      p += size;
    }
  } catch {
    return undefined;
  }
  return undefined;
}

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
 * The fix asks for `calloc(1, sizeof(state))`, which clears it: one byte of the function's body.
 *
 * Its Lua grammar (tree-sitter-lua 2.1.3) makes its state (the token started, the depth of a long bracket) with
 * `malloc`, and its `deserialize` restores it only from a token's two bytes: before a file's first string or comment
 * there is none, and the state is whatever the memory held. Where that was a number from 1 to 5, the scanner believed
 * itself inside a string or comment, matched no string or comment start, and the rest of the file parsed as errors:
 * 4 in 4,000 parses of one file, after files of other languages, lost its definitions. The fix clears both fields at
 * the start of `deserialize` (seven bytes more), as tree-sitter asks of a scanner given no bytes.
 *
 * A body is changed only when it is exactly the one expected, so a different build (QUARRY_GRAMMAR_DIR, a newer
 * package) is left as it is.
 */

interface Fix {
  /** The exported function whose body is mended. */
  fn: string;
  /** The body as built (locals, code), and the body that replaces it (it may be longer). */
  body: readonly number[];
  mended: readonly number[];
  /** The imported functions the body calls, by name, at the offsets of their indexes in the body. */
  calls?: Readonly<Record<number, string>>;
}

const FIXES: Record<string, Fix> = {
  // (func (result i32) (call $calloc (i32.const 0) (i32.const 4))) → (i32.const 1)
  swift: {
    fn: 'tree_sitter_swift_external_scanner_create',
    body: [0x00, 0x41, 0x00, 0x41, 0x04, 0x10, 0x00, 0x0b],
    mended: [0x00, 0x41, 0x01, 0x41, 0x04, 0x10, 0x00, 0x0b],
    calls: { 6: 'calloc' },
  },
  // (func (param $state i32) (param $buffer i32) (param $length i32)   ;; state: { started, depth }, i32 each
  //   (if (i32.eq (local.get $length) (i32.const 2)) (then …both fields from the buffer…)))
  // gains, first, (i64.store (local.get $state) (i64.const 0)): both fields cleared
  lua: {
    fn: 'tree_sitter_lua_external_scanner_deserialize',
    body: [
      0x00, 0x20, 0x02, 0x41, 0x02, 0x46, 0x04, 0x40, 0x20, 0x00, 0x20, 0x01, 0x2c, 0x00, 0x00, 0x36, 0x02,
      0x00, 0x20, 0x00, 0x20, 0x01, 0x2c, 0x00, 0x01, 0x36, 0x02, 0x04, 0x0b, 0x0b,
    ],
    mended: [
      0x00, 0x20, 0x00, 0x42, 0x00, 0x37, 0x02, 0x00, 0x20, 0x02, 0x41, 0x02, 0x46, 0x04, 0x40, 0x20, 0x00,
      0x20, 0x01, 0x2c, 0x00, 0x00, 0x36, 0x02, 0x00, 0x20, 0x00, 0x20, 0x01, 0x2c, 0x00, 0x01, 0x36, 0x02,
      0x04, 0x0b, 0x0b,
    ],
  },
};

/** The grammar's module, mended where FIXES names a fault in it; the same bytes when there is nothing to mend. */
export function fixGrammar(grammar: string, bytes: Uint8Array): Uint8Array {
  const fix = FIXES[grammar];
  if (!fix) return bytes;
  const body = functionBody(bytes, fix.fn);
  if (!body || body.size !== fix.body.length) return bytes;
  for (let i = 0; i < fix.body.length; i++) if (bytes[body.offset + i] !== fix.body[i]) return bytes;
  for (const [at, callee] of Object.entries(fix.calls ?? {}))
    if (body.imports[fix.body[Number(at)]!] !== callee) return bytes;
  return replaceBody(bytes, body, fix.mended);
}

/**
 * The ABI version a grammar's module declares (the first field of its `TSLanguage`), read from its bytes, or
 * undefined where the module is not laid out as expected. web-tree-sitter reads a language's tables as its own ABI
 * lays them out as soon as it loads one, before any check: a grammar of an older ABI (tree-sitter-wasms' Elm is 12,
 * web-tree-sitter 0.25.10 takes 13 to 15) had it read counts from the wrong fields and loop over whatever numbers
 * the memory held, from 1 ms to 18 s and 750 MiB of strings, before the parser refused the language.
 *
 * The language function (`tree_sitter_<name>`) returns the struct's address, `__memory_base` plus a constant; the
 * module's one data segment starts at `__memory_base`, so the version is the segment's four bytes at that constant.
 */
export function grammarAbi(grammar: string, bytes: Uint8Array): number | undefined {
  const fn = functionBody(bytes, `tree_sitter_${grammar.replace(/-/g, '_')}`);
  if (!fn) return undefined;
  // (func (result i32) (i32.add (global.get $__memory_base) (i32.const OFFSET)))
  const c = new Cursor(bytes, fn.offset);
  if (bytes[c.p++] !== 0x00 || bytes[c.p++] !== 0x23) return undefined;
  c.leb(); // the global's index
  if (bytes[c.p++] !== 0x41) return undefined;
  const offset = c.leb();
  if (c.last & 0x40) return undefined; // a negative offset: not this layout
  if (bytes[c.p++] !== 0x6a || bytes[c.p] !== 0x0b) return undefined;
  const data = dataSegment(bytes);
  if (!data || offset + 4 > data.size) return undefined;
  const at = data.offset + offset;
  return bytes[at]! + bytes[at + 1]! * 2 ** 8 + bytes[at + 2]! * 2 ** 16 + bytes[at + 3]! * 2 ** 24;
}

/** Where the bytes of a module's one data segment lie, when it has one placed at `global.get` (its memory base). */
function dataSegment(bytes: Uint8Array): { offset: number; size: number } | undefined {
  const c = new Cursor(bytes, 0);
  for (const section of sections(c)) {
    if (section.id !== 11) continue;
    if (c.leb() !== 1 || c.leb() !== 0 || bytes[c.p++] !== 0x23) return undefined; // one active segment at a global
    c.leb();
    if (bytes[c.p++] !== 0x0b) return undefined;
    const size = c.leb();
    return { offset: c.p, size };
  }
  return undefined;
}

/** A position in a module's bytes, and the reading of unsigned LEB128 numbers from it. */
class Cursor {
  /** The last byte `leb()` read (its 0x40 bit is a signed number's sign). */
  last = 0;
  constructor(
    readonly bytes: Uint8Array,
    public p: number,
  ) {}

  leb(): number {
    let result = 0;
    let shift = 0;
    do {
      this.last = this.bytes[this.p++]!;
      result += (this.last & 0x7f) * 2 ** shift;
      shift += 7;
    } while (this.last & 0x80 && this.p < this.bytes.length);
    return result;
  }
}

/**
 * A module's sections, in order: each one's id, where its size is written, where its content starts and that size.
 * The cursor stands at the content when one is given, and is moved past it when the next is asked for.
 */
function* sections(c: Cursor): Generator<{ id: number; sizeAt: number; start: number; size: number }> {
  c.p = 8; // magic and version
  while (c.p < c.bytes.length) {
    const id = c.bytes[c.p++]!;
    const sizeAt = c.p;
    const size = c.leb();
    const start = c.p;
    yield { id, sizeAt, start, size };
    c.p = start + size;
  }
}

/**
 * The module with one function's body replaced: the function's size and its code section's size are written again
 * (LEB128), the rest of the bytes are copied as they are. The grammars' release builds hold nothing else that points
 * at a byte offset in the code section (a debug build's DWARF sections, relocations or branch hints would: their
 * offsets after the body would be off by the body's growth, which only a debugger reads).
 */
function replaceBody(bytes: Uint8Array, body: FunctionBody, mended: readonly number[]): Uint8Array {
  const section = leb128(
    body.sectionSize - body.size - (body.offset - body.sizeAt) + lebLength(mended.length) + mended.length,
  );
  const size = leb128(mended.length);
  const out = new Uint8Array(
    bytes.length -
      (body.sectionStart - body.sectionSizeAt) +
      section.length -
      (body.offset - body.sizeAt) +
      size.length -
      body.size +
      mended.length,
  );
  let p = 0;
  const put = (part: ArrayLike<number>) => {
    out.set(part, p);
    p += part.length;
  };
  put(bytes.subarray(0, body.sectionSizeAt));
  put(section);
  put(bytes.subarray(body.sectionStart, body.sizeAt));
  put(size);
  put(mended);
  put(bytes.subarray(body.offset + body.size));
  return out;
}

function leb128(n: number): number[] {
  const out: number[] = [];
  do {
    const byte = n % 128;
    n = Math.floor(n / 128);
    out.push(n > 0 ? byte | 0x80 : byte);
  } while (n > 0);
  return out;
}

const lebLength = (n: number) => leb128(n).length;

/** Where a function's body lies in a module: its bytes, its size's, and its code section's. */
export interface FunctionBody {
  /** The body (its locals and code) and its length. */
  offset: number;
  size: number;
  /** Where the body's size is written (it ends at `offset`). */
  sizeAt: number;
  /** The code section: where its size is written, where its content starts, and that size. */
  sectionSizeAt: number;
  sectionStart: number;
  sectionSize: number;
  /** The names of the functions the module imports, by function index. */
  imports: string[];
}

/** Where an exported function's body lies in a WebAssembly module, or undefined. */
export function functionBody(bytes: Uint8Array, name: string): FunctionBody | undefined {
  const c = new Cursor(bytes, 0);
  const leb = () => c.leb();
  const readName = (): string => {
    const n = leb();
    const text = new TextDecoder().decode(bytes.subarray(c.p, c.p + n));
    c.p += n;
    return text;
  };
  const skipLimits = (): void => {
    const flags = leb();
    leb();
    if (flags & 1) leb();
  };
  const imports: string[] = [];
  let index = -1;
  let code: { sizeAt: number; start: number; size: number } | undefined;
  try {
    for (const section of sections(c)) {
      if (section.id === 2) {
        // imports: only functions take a function index
        for (let n = leb(); n > 0; n--) {
          readName();
          const field = readName();
          const kind = bytes[c.p++]!;
          if (kind === 0) {
            leb();
            imports.push(field);
          } else if (kind === 1) {
            c.p++; // table's element type
            skipLimits();
          } else if (kind === 2) {
            skipLimits();
          } else if (kind === 3) {
            c.p += 2; // a global's type and mutability
          } else if (kind === 4) {
            c.p++; // a tag's attribute
            leb();
          } else {
            return undefined;
          }
        }
      } else if (section.id === 7) {
        for (let n = leb(); n > 0; n--) {
          const exported = readName();
          const kind = bytes[c.p++]!;
          const at = leb();
          if (kind === 0 && exported === name) index = at;
        }
      } else if (section.id === 10) code = section;
    }
    if (index < imports.length || !code) return undefined;
    c.p = code.start;
    const count = leb();
    for (let i = 0; i < count; i++) {
      const sizeAt = c.p;
      const size = leb();
      if (i === index - imports.length)
        return {
          offset: c.p,
          size,
          sizeAt,
          sectionSizeAt: code.sizeAt,
          sectionStart: code.start,
          sectionSize: code.size,
          imports,
        };
      c.p += size;
    }
  } catch {
    return undefined;
  }
  return undefined;
}

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { chunkByLines, chunkFile, loadedGrammarNames, parseDeadline } from '../src/chunk/chunker.ts';
import { fixGrammar, functionBody, grammarAbi } from '../src/chunk/grammar-fixes.ts';
import { grammarUnsupported } from '../src/chunk/wasm-flags.ts';
import { processFile } from '../src/indexing/process-file.ts';
import { encodeRefs } from '../src/store/types.ts';
import { detectLanguage, grammarFor } from '../src/workspace/languages.ts';
import { FIXTURES, REPO, testConfig } from './helpers.ts';

const polyglot = join(FIXTURES, 'polyglot');
const noMerge = { ...testConfig().chunk, targetChars: 0 };

async function chunkFixture(name: string, options = noMerge) {
  const text = readFileSync(join(polyglot, name), 'utf8');
  return { text, ...(await chunkFile(text, detectLanguage(name).grammar, options)) };
}

/** Expected definitions per fixture: `kind:name@start-end` (and `<container` when nested). */
const EXPECTED: Record<string, string[]> = {
  'shapes.ts': [
    'interface:Shape@3-5',
    'class:Circle@7-13',
    'method:area@10-12<Circle',
    'function:totalArea@15-17',
    'function:describeShape@19-19',
  ],
  'widget.tsx': ['type:Props@3-3', 'function:Button@5-7', 'class:Panel@9-13', 'method:render@10-12<Panel'],
  'util.js': ['function:joinAll@3-5', 'class:Cache@7-15', 'method:lookup@12-14<Cache'],
  'config_loader.py': [
    'function:parse_config@8-11',
    'class:ConfigStore@14-23',
    'method:files@18-20<ConfigStore',
    'method:load@22-23<ConfigStore',
  ],
  'server.go': ['type:Server@8-11', 'method:HandleHealth@13-16<Server', 'function:NewServer@18-20'],
  'lib.rs': [
    'struct:Registry@3-5',
    'impl:Registry@7-17',
    'method:register@12-16<Registry',
    'trait:Named@19-21',
    'function:checksum@23-25',
  ],
  'Greeter.java': ['class:Greeter@5-15', 'method:greet@12-14<Greeter', 'interface:Polite@17-19'],
  'buffer.c': ['struct:buffer@4-7', 'function:buffer_new@9-14', 'function:buffer_free@16-19'],
  'matrix.cpp': [
    'module:linalg@3-21',
    'class:Matrix@5-13<linalg',
    'method:at@8-8<Matrix',
    'function:trace@15-19<linalg',
  ],
  'Inventory.cs': [
    'module:Shop@3-19',
    'class:Inventory@5-13<Shop',
    'method:AddItem@9-12<Inventory',
    'interface:IPriced@15-18<Shop',
  ],
  'account.rb': [
    'module:Bank@3-14',
    'class:Account@4-13<Bank',
    'method:deposit@10-12<Account',
    'method:audit@16-18',
  ],
  'Router.php': ['class:Router@5-13', 'method:add@9-12<Router', 'function:dispatch@15-18'],
  'Queue.kt': [
    'class:TaskQueue@5-11',
    'method:push@8-10<TaskQueue',
    'object:Defaults@13-15',
    'function:drain@17-19',
  ],
  'Temperature.swift': [
    'class:Temperature@3-9',
    'method:fahrenheit@6-8<Temperature',
    'interface:Sensor@11-13',
    'function:average@15-17',
  ],
  'Ledger.scala': [
    'class:Ledger@5-9',
    'method:record@8-8<Ledger',
    'object:Ledger@11-13',
    'trait:Auditable@15-17',
  ],
  'deploy.sh': ['function:build_image@4-6', 'function:push_image@8-10'],
};

describe('tree-sitter chunking', () => {
  it('covers at least 15 languages with fixtures', () => {
    const langs = new Set(Object.keys(EXPECTED).map((f) => detectLanguage(f).id));
    assert.ok(langs.size >= 15, `only ${langs.size} languages`);
    for (const f of Object.keys(EXPECTED)) assert.ok(readdirSync(polyglot).includes(f));
  });

  for (const [file, expected] of Object.entries(EXPECTED)) {
    it(`finds the definitions of ${file}`, async () => {
      const r = await chunkFixture(file);
      assert.equal(r.method, 'tree-sitter');
      const got = r.symbols.map(
        (s) => `${s.kind}:${s.name}@${s.startLine}-${s.endLine}${s.container ? `<${s.container}` : ''}`,
      );
      for (const e of expected) assert.ok(got.includes(e), `${file}: missing ${e}; got ${got.join(' ')}`);
    });

    it(`keeps every non-blank line of ${file} in some chunk`, async () => {
      const r = await chunkFixture(file);
      const lines = r.text.split('\n');
      const covered = new Set<number>();
      for (const c of r.chunks) {
        assert.ok(c.startLine <= c.endLine);
        assert.equal(c.text, lines.slice(c.startLine - 1, c.endLine).join('\n'));
        for (let l = c.startLine; l <= c.endLine; l++) covered.add(l);
      }
      lines.forEach((line, i) => {
        if (line.trim()) assert.ok(covered.has(i + 1), `${file}: line ${i + 1} dropped: ${line}`);
      });
    });
  }

  it('chunks the same whether files are chunked one by one or concurrently', async () => {
    // regression: concurrent grammar loads left some grammars finding no definitions
    const files = Object.keys(EXPECTED);
    const parallel = await Promise.all(files.map((f) => chunkFixture(f)));
    for (const [i, f] of files.entries()) {
      const one = await chunkFixture(f);
      assert.deepEqual(parallel[i]!.chunks, one.chunks, f);
    }
  });

  it("stores a file's references as the object of its names would print", async () => {
    const asObject = (refs: Array<{ name: string; lines: number[] }>) =>
      JSON.stringify(Object.fromEntries(refs.map((r) => [r.name, r.lines])));
    let files = 0;
    for (const f of Object.keys(EXPECTED)) {
      const { refs } = await chunkFixture(f);
      if (!refs.length) continue;
      files++;
      assert.equal(encodeRefs(refs)!.json, asObject(refs), f);
      assert.deepEqual(
        JSON.parse(encodeRefs(refs)!.json),
        Object.fromEntries(refs.map((r) => [r.name, r.lines])),
      );
    }
    assert.ok(files >= 10, `${files} fixtures with references`);
    // names an object orders or merges, and names JSON escapes
    for (const refs of [
      [
        { name: 'b', lines: [1] },
        { name: '42', lines: [2] },
        { name: '0', lines: [3] },
      ],
      [
        { name: 'x', lines: [1] },
        { name: '4294967295', lines: [2] },
        { name: '007', lines: [3] },
      ],
      [
        { name: 'a', lines: [1] },
        { name: 'b', lines: [2] },
        { name: 'a', lines: [3, 4] },
      ],
      [
        { name: '__proto__', lines: [5] },
        { name: 'say"hi"\\', lines: [6] },
        { name: 'ünï\u2028', lines: [] },
      ],
      // lines that JSON prints otherwise than a join: not numbers, and a hole
      [
        { name: 'a', lines: [1, Number.NaN, Number.POSITIVE_INFINITY] },
        // biome-ignore lint/suspicious/noSparseArray: the hole is the case
        { name: 'b', lines: [1, , 3] as number[] },
      ],
    ])
      assert.equal(encodeRefs(refs)!.json, asObject(refs), JSON.stringify(refs));
    assert.equal(encodeRefs([]), undefined);
  });

  it('keeps imports and top-level statements between definitions', async () => {
    const r = await chunkFixture('config_loader.py');
    const first = r.chunks[0]!;
    assert.equal(first.symbol, null);
    assert.match(first.text, /import json/);
    assert.match(r.chunks[r.chunks.length - 1]!.text, /__main__/);
  });

  it('gives a chunk its definition name, kind and enclosing symbol', async () => {
    const r = await chunkFixture('shapes.ts');
    const total = r.chunks.find((c) => c.symbol === 'totalArea');
    assert.ok(total);
    assert.equal(total.kind, 'function');
    assert.equal(total.startLine, 15);
    assert.equal(total.endLine, 17);
  });

  it('labels a Go method with its receiver type, and functions bound to names (Go var, Python lambda) as definitions', async () => {
    const go = [
      'package gin',
      '',
      'type RouterGroup struct{ basePath string }',
      '',
      'func (group *RouterGroup) Group(relativePath string) *RouterGroup {',
      '\treturn &RouterGroup{basePath: relativePath}',
      '}',
      '',
      'func (l List[T]) Len() int { return 0 }',
      '',
      'var defaultLogFormatter = func(param LogFormatterParams) string {',
      '\treturn param.Path',
      '}',
      '',
    ].join('\n');
    const g = await chunkFile(go, 'go', { ...testConfig().chunk, targetChars: 1 });
    const sym = (name: string) => g.symbols.find((s) => s.name === name);
    assert.equal(sym('Group')?.container, 'RouterGroup');
    assert.equal(sym('Group')?.kind, 'method');
    assert.equal(sym('Len')?.container, 'List', 'a generic receiver');
    assert.equal(sym('defaultLogFormatter')?.kind, 'function');
    const chunk = (name: string) => g.chunks.find((c) => c.symbol === name);
    assert.equal(chunk('Group')?.container, 'RouterGroup');
    assert.equal(chunk('defaultLogFormatter')?.startLine, 11);
    const py = await chunkFile(
      'class Sizes:\n    half = lambda self, x: x / 2\n\n\ndouble = lambda x: x * 2\n',
      'python',
      testConfig().chunk,
    );
    assert.deepEqual(
      py.symbols.map((s) => `${s.container ?? ''}.${s.name} ${s.kind}`),
      ['.Sizes class', 'Sizes.half method', '.double function'],
    );
  });

  it('class fields holding functions are methods; top-level constants and variables are symbols, not chunk boundaries', async () => {
    const ts = [
      'export const DEFAULT_TIMEOUT_MS = 30_000;',
      'let counter = 0;',
      'export class App {',
      "  name = 'x';",
      '  fetch = (request: Request): Response => {',
      "    return new Response('ok');",
      '  };',
      '  handle = async function (x: number) {',
      '    return x;',
      '  };',
      '}',
      'export const helper = () => 1;',
      '',
    ].join('\n');
    const r = await chunkFile(ts, 'typescript', testConfig().chunk);
    const shown = r.symbols.map((s) => `${s.kind} ${s.container ? `${s.container}.` : ''}${s.name}`);
    for (const want of [
      'constant DEFAULT_TIMEOUT_MS',
      'variable counter',
      'class App',
      'method App.fetch',
      'method App.handle',
      'function helper',
    ])
      assert.ok(shown.includes(want), `${want} missing from ${shown.join(', ')}`);
    assert.ok(!shown.some((s) => s.endsWith(' name')), 'a field holding a string is no method');
    // the constant lives in a chunk, it does not make one of its own
    assert.ok(!r.chunks.some((c) => c.symbol === 'DEFAULT_TIMEOUT_MS'));
    const js = await chunkFile(
      'class Widget {\n  render = () => {\n    return 1;\n  }\n}\nconst MAX = 3;\n',
      'javascript',
      testConfig().chunk,
    );
    assert.deepEqual(
      js.symbols.map((s) => `${s.kind} ${s.container ? `${s.container}.` : ''}${s.name}`),
      ['class Widget', 'method Widget.render', 'constant MAX'],
    );
    // methods assigned to a prototype are definitions too (regression: fastify's 35 `Reply.prototype.m` were missing)
    const proto = await chunkFile(
      'function Reply (res) {\n  this.res = res\n}\nReply.prototype.send = function (payload) {\n  return this.res.end(payload)\n}\nReply.prototype.code = (c) => c\nReply.prototype.count = 3\nother.send = function () {}\n',
      'javascript',
      testConfig().chunk,
    );
    assert.deepEqual(
      proto.symbols.map((s) => `${s.kind} ${s.name}:${s.startLine}`),
      ['function Reply:1', 'method send:4', 'method code:7'],
    );
    // accessors take the name of the property they define (regression: fastify's getters showed as `method get`);
    // an object literal's own getter keeps its name, and a plain object's `get` method stays `get`
    const accessors = await chunkFile(
      "Object.defineProperties(Reply.prototype, {\n  statusCode: {\n    get () { return this.code },\n    set (v) { this.code = v }\n  }\n})\nObject.defineProperty(Reply.prototype, 'server', {\n  get () { return this.srv }\n})\nconst o = { get size () { return 1 }, get () { return 2 } }\n",
      'typescript',
      testConfig().chunk,
    );
    assert.deepEqual(
      accessors.symbols.map((s) => `${s.kind} ${s.name}:${s.startLine}`),
      [
        'method statusCode:3',
        'method statusCode:4',
        'method server:8',
        'method size:10',
        'method get:10',
        'constant o:10',
      ],
    );
    const py = await chunkFile(
      'TIMEOUT = 30\nregistry = {}\n\ndef run():\n    return TIMEOUT\n',
      'python',
      testConfig().chunk,
    );
    assert.deepEqual(
      py.symbols.map((s) => `${s.kind} ${s.name}`),
      ['constant TIMEOUT', 'variable registry', 'function run'],
    );
  });

  it('merges small neighbours up to the target size', async () => {
    const merged = await chunkFixture('shapes.ts', { ...noMerge, targetChars: 10_000 });
    assert.equal(merged.chunks.length, 1);
    assert.ok(merged.chunks[0]!.symbols.includes('totalArea'));
    assert.ok(merged.chunks[0]!.symbols.includes('Circle'));
  });

  it('splits an oversized class at its methods, and an oversized function into windows', async () => {
    const methods = Array.from(
      { length: 30 },
      (_, i) => `  method${i}(x: number): number {\n${'    x = x + 1;\n'.repeat(8)}    return x;\n  }\n`,
    ).join('\n');
    const text = `export class Big {\n  field = 1;\n\n${methods}}\n\nfunction huge() {\n${'  call();\n'.repeat(800)}}\n`;
    const r = await chunkFile(text, 'typescript', { ...noMerge, maxChars: 1500, targetChars: 1000 });
    const bigHeader = r.chunks.find((c) => c.symbol === 'Big');
    assert.ok(bigHeader, 'class header chunk');
    assert.ok(bigHeader.text.length <= 1500);
    const m7 = r.chunks.filter((c) => c.symbols.includes('method7'));
    assert.equal(m7.length, 1);
    assert.equal(m7[0]!.container, 'Big');
    const huge = r.chunks.filter((c) => c.symbol === 'huge');
    assert.ok(huge.length >= 4, `huge split into ${huge.length}`);
    for (const c of r.chunks) assert.ok(c.text.length <= 1500, `chunk ${c.startLine}-${c.endLine} too big`);
  });

  it('survives deeply nested code', async () => {
    const depth = 2000;
    const text = `function deep() {\n  return ${'('.repeat(depth)}1${')'.repeat(depth)};\n}\n${'{'.repeat(depth)}${'}'.repeat(depth)}\n`;
    const r = await chunkFile(text, 'javascript', testConfig().chunk);
    assert.ok(r.chunks.length >= 1);
    assert.ok(r.symbols.some((s) => s.name === 'deep'));
  });

  it("counts a parse's own running time against its deadline, and a stall of the thread as 200 ms at most", () => {
    let t = 1000;
    const clock = () => t;
    // steady progress: calls 0.2 ms apart pass a 3 s budget after 15,000 of them
    const steady = parseDeadline(3000, clock);
    let calls = 0;
    while (!steady()) {
      t += 0.2;
      calls++;
    }
    assert.ok(calls > 14_990 && calls < 15_010, `${calls} calls`);
    // a paused machine: 10 s between two calls counts as 200 ms, so 1 s of parsing on either side is not cut
    const paused = parseDeadline(3000, clock);
    for (let i = 0; i < 5000; i++) {
      t += 0.2;
      assert.equal(paused(), false);
    }
    t += 10_000;
    assert.equal(paused(), false, 'a stall is not parsing');
    for (let i = 0; i < 5000; i++) {
      t += 0.2;
      assert.equal(paused(), false);
    }
    // and the budget is still there: another 1.6 s of parsing reaches it
    let more = 0;
    while (!paused()) {
      t += 0.2;
      more++;
    }
    assert.ok(more > 3990 && more < 4010, `${more} calls`);
  });

  it('falls back to overlapping line windows for text', () => {
    const text = Array.from({ length: 150 }, (_, i) => `line ${i + 1}`).join('\n');
    const r = chunkByLines(text, { ...testConfig().chunk, windowLines: 60, overlapLines: 8 });
    assert.equal(r.method, 'lines');
    assert.deepEqual(
      r.chunks.map((c) => [c.startLine, c.endLine]),
      [
        [1, 60],
        [53, 112],
        [105, 150],
      ],
    );
  });

  it('falls back to line windows for a language without a grammar', async () => {
    const r = await chunkFixture('notes.md');
    assert.equal(r.method, 'lines');
    assert.equal(r.chunks.length, 1);
  });

  it('chunks a file with syntax errors without losing lines', async () => {
    const text = 'function ok() { return 1; }\n\nfunction broken( {\n  let x = ;\n}\n\nclass Fine {}\n';
    const r = await chunkFile(text, 'javascript', noMerge);
    assert.ok(r.symbols.some((s) => s.name === 'ok'));
    const covered = r.chunks.flatMap((c) =>
      Array.from({ length: c.endLine - c.startLine + 1 }, (_, i) => c.startLine + i),
    );
    for (const l of [1, 3, 4, 5, 7]) assert.ok(covered.includes(l), `line ${l}`);
  });

  it('runs every grammar on the V8 versions measured, and Swift by lines where V8 13 dies optimising its lexer', async () => {
    for (const major of [11, 12]) assert.equal(grammarUnsupported('swift', major), false);
    assert.equal(grammarUnsupported('swift', 13), true);
    assert.equal(grammarUnsupported('cpp', 13), false);
    // this V8 parses Swift (CI runs Node 20): definitions come from the grammar, not line windows
    const swift = await chunkFile(
      'struct Point {\n  func norm() -> Int { 1 }\n}\n',
      'swift',
      testConfig().chunk,
    );
    if (!grammarUnsupported('swift'))
      assert.deepEqual(swift.symbols.map((d) => d.name).sort(), ['Point', 'norm']);
    else assert.equal(swift.method, 'lines');
  });

  it('parses Swift raw strings alike in a fresh process and after other files (the scanner state is cleared)', async () => {
    // tree-sitter-wasms' Swift scanner read its state from uncleared memory: after any other parse, raw strings gave
    // error trees (and every Swift parse ran 3-10x slower); chunk/grammar-fixes.ts mends the module
    const swift = [
      'struct CrashTest {',
      '    let regex: String',
      '}',
      '',
      'let waitOnEventLoop = CrashTest(',
      '    regex: #"Precondition failed: wait\\(\\) must not be called when on an EventLoop"#',
      ')',
      '',
      'func quiesceMessage(ticks: Int) -> String {',
      '    return #"EventLoop didn\'t quiesce after \\#(ticks) ticks."#',
      '}',
      '',
      'final class LeakDetector {',
      '    var pattern = ##"leaking "promise" created at"##',
      '',
      '    func matches(_ line: String) -> Bool {',
      '        return line.contains(pattern)',
      '    }',
      '}',
      '',
    ].join('\n');
    const names = (r: Awaited<ReturnType<typeof chunkFile>>) =>
      r.symbols.map((s) => `${s.kind}:${s.name}@${s.startLine}`).join(' ');
    const want = 'class:CrashTest@1 function:quiesceMessage@9 class:LeakDetector@13 method:matches@16';
    for (let i = 0; i < 3; i++) {
      await chunkFile('int main(void) { return 0; }\n', 'c', noMerge);
      await chunkFile(readFileSync(join(polyglot, 'Temperature.swift'), 'utf8'), 'swift', noMerge);
      const r = await chunkFile(swift, 'swift', noMerge);
      assert.equal(r.method, 'tree-sitter');
      assert.equal(names(r), want, `parse ${i + 1}`);
    }
  });

  it("mends one byte of tree-sitter-wasms' Swift grammar, and leaves other builds and grammars as they are", () => {
    const require = createRequire(import.meta.url);
    const out = join(dirname(require.resolve('tree-sitter-wasms/package.json')), 'out');
    const bytes = new Uint8Array(readFileSync(join(out, 'tree-sitter-swift.wasm')));
    const fixed = fixGrammar('swift', bytes);
    const changed = [...bytes.keys()].filter((i) => bytes[i] !== fixed[i]);
    assert.equal(changed.length, 1);
    const body = functionBody(bytes, 'tree_sitter_swift_external_scanner_create')!;
    assert.equal(changed[0], body.offset + 2); // calloc(0, 4) → calloc(1, 4)
    assert.equal(fixed[changed[0]!], 1);
    // a build whose function differs is not touched, nor is another grammar
    const other = Uint8Array.from(bytes);
    other[body.offset + 4] = 0x08;
    assert.equal(fixGrammar('swift', other), other);
    const go = new Uint8Array(readFileSync(join(out, 'tree-sitter-go.wasm')));
    assert.equal(fixGrammar('go', go), go);
    assert.equal(functionBody(go, 'no_such_function'), undefined);
  });

  it("clears tree-sitter-wasms' Lua scanner state before a file's first token, and changes nothing else", async () => {
    // its deserialize restored the state only from a token's bytes: before a file's first string or comment it was
    // what the memory held, and a parse after other files could lose a file's definitions
    const require = createRequire(import.meta.url);
    const out = join(dirname(require.resolve('tree-sitter-wasms/package.json')), 'out');
    const bytes = new Uint8Array(readFileSync(join(out, 'tree-sitter-lua.wasm')));
    const fixed = fixGrammar('lua', bytes);
    const wasm = (globalThis as unknown as { WebAssembly: { validate(b: Uint8Array): boolean } }).WebAssembly;
    assert.ok(wasm.validate(fixed));
    const name = 'tree_sitter_lua_external_scanner_deserialize';
    const [before, after] = [functionBody(bytes, name)!, functionBody(fixed, name)!];
    const body = (b: Uint8Array, f: { offset: number; size: number }) => [
      ...b.subarray(f.offset, f.offset + f.size),
    ];
    // (i64.store (local.get $state) (i64.const 0)) first, then the body as built
    const clear = [0x20, 0x00, 0x42, 0x00, 0x37, 0x02, 0x00];
    assert.deepEqual(body(fixed, after), [0x00, ...clear, ...body(bytes, before).slice(1)]);
    assert.equal(fixed.length, bytes.length + clear.length);
    // the module before the code section, and the other functions, as they were
    assert.deepEqual(fixed.subarray(0, before.sectionSizeAt), bytes.subarray(0, before.sectionSizeAt));
    for (const other of ['create', 'scan', 'serialize', 'destroy'].map(
      (f) => `tree_sitter_lua_external_scanner_${f}`,
    ))
      assert.deepEqual(
        body(fixed, functionBody(fixed, other)!),
        body(bytes, functionBody(bytes, other)!),
        other,
      );
    assert.deepEqual(fixed.subarray(after.offset + after.size), bytes.subarray(before.offset + before.size));
    // another build of the function is left alone
    const other = Uint8Array.from(bytes);
    other[before.offset + 4] = 0x03;
    assert.equal(fixGrammar('lua', other), other);

    // the module's other bytes in the code section, up to the mended function, as they were
    assert.deepEqual(
      fixed.subarray(after.sectionStart, after.sizeAt),
      bytes.subarray(before.sectionStart, before.sizeAt),
    );

    // and the state no longer carries over: one parser, no new language between files, so the scanner keeps what
    // the file before left (a file that ends inside a string or comment). As built, the next file's first string
    // then failed and its tree had errors; mended, it parses as in a new parser. Each build in its own process: two
    // builds of one grammar in a process share its functions (the first one loaded).
    const script = `
      import { readFileSync } from 'node:fs';
      import { join } from 'node:path';
      import * as TS from 'web-tree-sitter';
      import { fixGrammar } from './src/chunk/grammar-fixes.ts';
      await TS.Parser.init();
      const bytes = new Uint8Array(readFileSync(join(process.argv[1], 'tree-sitter-lua.wasm')));
      const p = new TS.Parser();
      p.setLanguage(await TS.Language.load(process.argv[2] === 'mended' ? fixGrammar('lua', bytes) : bytes));
      const errors = (text) => { const t = p.parse(text); const e = t.rootNode.hasError; t.delete(); return e; };
      const lua = 'local DELAY = os.getenv("DELAY")\\nfunction delay(t)\\n  return t\\nend\\n';
      const out = [errors(lua)];
      for (const before of ['local s = [==[ x', 'local s = "abc', '--[[ x', "local s = 'x"]) {
        p.parse(before).delete();
        out.push(errors(lua));
      }
      console.log(JSON.stringify(out));`;
    const run = (build: string) =>
      JSON.parse(
        execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, out, build], {
          cwd: REPO,
          encoding: 'utf8',
        }),
      ) as boolean[];
    assert.deepEqual(run('mended'), [false, false, false, false, false]);
    assert.deepEqual(run('built'), [false, true, true, true, true], 'the fault this mends, as built');
  });

  it("reads a grammar's ABI from its module, and refuses one the runtime cannot take before loading it", async () => {
    const require = createRequire(import.meta.url);
    const out = join(dirname(require.resolve('tree-sitter-wasms/package.json')), 'out');
    const abi = (g: string) =>
      grammarAbi(g, new Uint8Array(readFileSync(join(out, `tree-sitter-${g}.wasm`))));
    // what web-tree-sitter reports once each is loaded (13 to 15 load; Elm's, 12, made it read its tables wrongly)
    assert.deepEqual(['c', 'lua', 'dart', 'c_sharp', 'elm'].map(abi), [14, 13, 15, 13, 12]);
    // a module laid out otherwise says nothing
    const c = new Uint8Array(readFileSync(join(out, 'tree-sitter-c.wasm')));
    const fn = functionBody(c, 'tree_sitter_c')!;
    const other = Uint8Array.from(c);
    other[fn.offset + 1] = 0x41;
    assert.equal(grammarAbi('c', other), undefined);
    assert.equal(grammarAbi('no_such_grammar', c), undefined);
    // an Elm file is chunked by lines, as the runtime cannot parse it, without loading the grammar
    const elm = 'module Main exposing (main)\n\nmain : Int\nmain =\n    1\n';
    const r = await chunkFile(elm, 'elm', noMerge);
    assert.equal(r.method, 'lines');
    assert.ok(!loadedGrammarNames().includes('elm'));
  });

  it(
    'tells a header with a long class-like line apart in linear time (a quadratic pattern hung here)',
    { timeout: 60_000 },
    () => {
      assert.equal(grammarFor('x.h', `class ${'a'.repeat(300_000)};\nint x;\n`), 'c');
      assert.equal(grammarFor('x.h', `namespace ${'a'.repeat(300_000)};\nint x;\n`), 'c');
    },
  );

  it('parses a C++ header named .h as C++, and a C header as C', async () => {
    const cpp = [
      '#pragma once',
      '#include <string>',
      '',
      'namespace logging {',
      '',
      'class Logger {',
      ' public:',
      '  explicit Logger(std::string name);',
      '  void flush() { name_.clear(); }',
      '',
      ' private:',
      '  std::string name_;',
      '};',
      '',
      '}  // namespace logging',
      '',
    ].join('\n');
    const c = [
      '#ifndef QUEUE_H',
      '#define QUEUE_H',
      '#ifdef __cplusplus',
      'extern "C" {',
      '#endif',
      '',
      '/* a queue; see class_names.txt for what public: means here */',
      'typedef struct queue {',
      '  int size;',
      '} queue_t;',
      '',
      'int queue_push(queue_t *q, int v);',
      '',
      '#ifdef __cplusplus',
      '}',
      '#endif',
      '#endif',
      '',
    ].join('\n');
    assert.equal(grammarFor('include/logger.h', cpp), 'cpp');
    assert.equal(grammarFor('include/LOGGER.H', cpp), 'cpp');
    assert.equal(grammarFor('include/queue.h', c), 'c');
    assert.equal(grammarFor('src/queue.c', cpp), 'c'); // only a header is told by its text
    assert.equal(grammarFor('src/logger.hpp', c), 'cpp');
    for (const line of [
      'enum class Level { info };',
      'using Sink = int;',
      '  Logger() = default;',
      'using namespace std;',
    ])
      assert.equal(grammarFor('x.h', `#pragma once\n${line}\n`), 'cpp', line);

    // indexed: the C++ header is recorded as C++ and gets C++'s definitions; the C header stays C
    const root = mkdtempSync(join(tmpdir(), 'quarry-h-'));
    try {
      mkdirSync(join(root, 'include'));
      writeFileSync(join(root, 'include', 'logger.h'), cpp);
      writeFileSync(join(root, 'include', 'queue.h'), c);
      const symbols = async (path: string, language: string) => {
        const o = await processFile(root, { path, size: 1, mtimeMs: 1 }, testConfig());
        assert.equal(o.status, 'indexed');
        if (o.status !== 'indexed') return '';
        assert.equal(o.update.file.language, language);
        assert.equal(o.update.file.method, 'tree-sitter');
        return o.update.symbols.map((s) => `${s.kind}:${s.name}`).join(' ');
      };
      const logger = await symbols('include/logger.h', 'cpp');
      for (const want of ['module:logging', 'class:Logger', 'method:flush'])
        assert.ok(logger.split(' ').includes(want), `${want} in ${logger}`);
      const queue = await symbols('include/queue.h', 'c');
      assert.ok(queue.split(' ').includes('struct:queue'), queue);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("a large run's first pass", () => {
  it('cuts a file that has a grammar into coarse line windows, each line in one of them, and the parse into definitions', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 150; i++) lines.push(`def f${i}(a):`, `    return a + ${i}`, '');
    const root = mkdtempSync(join(tmpdir(), 'quarry-quick-'));
    try {
      writeFileSync(join(root, 'many.py'), lines.join('\n'));
      const config = testConfig();
      const quick = await processFile(root, { path: 'many.py', size: 1, mtimeMs: 1, quick: true }, config);
      const parsed = await processFile(root, { path: 'many.py', size: 1, mtimeMs: 1 }, config);
      assert.ok(quick.status === 'indexed' && parsed.status === 'indexed');
      assert.equal(quick.update.file.method, 'quick');
      const windows = quick.update.chunks.map((c) => [c.startLine, c.endLine]);
      // 449 lines in windows of four times the configured 60 lines, one after the other (line 240 is blank)
      assert.deepEqual(windows, [
        [1, 239],
        [241, 449],
      ]);
      assert.ok(quick.update.chunks.every((c) => c.text.length <= 4 * config.chunk.maxChars));
      assert.deepEqual([quick.update.symbols, quick.update.tokens.body], [[], '']);
      // the same bytes parsed: every function in a chunk of its own or merged with neighbours, never 240 lines
      assert.equal(parsed.update.file.method, 'tree-sitter');
      assert.ok(parsed.update.chunks.length > 2 * windows.length, `${parsed.update.chunks.length} chunks`);
      assert.equal(parsed.update.symbols.length, 150);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

// The repository map ranked by how the code is used (issue 65): the most referenced file first and its most
// referenced definitions first, build-tag and platform twins folded into one entry, whole multi-line signatures
// with their decorators above them, and a question's words leaning the ranking.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildRepoMap, questionMentions, rankDefinitions } from '../src/context/repomap.ts';
import { signatureAt } from '../src/context/signatures.ts';
import { indexProject, type LocalProject as Project } from '../src/project/local/index.ts';
import { makeTree, openLexical, removeTree } from './helpers.ts';

/** A file's text as the lines the map reads (1-based). */
function linesOf(text: string): Map<number, string> {
  return new Map(text.split('\n').map((line, i) => [i + 1, line]));
}

const JSON_TWIN = (tag: string, api: string, lib: string) =>
  `//go:build ${tag}\n\npackage json\n\nimport ${lib}\n\nfunc init() {\n\tAPI = ${api}{}\n}\n\ntype ${api} struct{}\n\n` +
  `func (j ${api}) Marshal(v any) ([]byte, error) {\n\treturn lib.Marshal(v)\n}\n\n` +
  `func (j ${api}) Unmarshal(data []byte, v any) error {\n\treturn lib.Unmarshal(data, v)\n}\n\n` +
  `func (j ${api}) MarshalIndent(v any, prefix, indent string) ([]byte, error) {\n\treturn lib.MarshalIndent(v, prefix, indent)\n}\n\n` +
  `func (j ${api}) NewEncoder(w io.Writer) Encoder {\n\treturn lib.NewEncoder(w)\n}\n\n` +
  `func (j ${api}) NewDecoder(r io.Reader) Decoder {\n\treturn lib.NewDecoder(r)\n}\n`;

const GO_FILES: Record<string, string> = {
  'codec/json/api.go':
    'package json\n\nvar API Core\n\ntype Core interface {\n\tMarshal(v any) ([]byte, error)\n}\n\ntype Encoder interface {\n\tEncode(v any) error\n}\n\ntype Decoder interface {\n\tDecode(v any) error\n}\n',
  'codec/json/json.go': JSON_TWIN('!jsoniter && !go_json', 'jsonApi', '"encoding/json"'),
  'codec/json/go_json.go': JSON_TWIN('go_json', 'gojsonApi', '"github.com/goccy/go-json"'),
  'codec/json/sonic.go': JSON_TWIN('sonic', 'sonicApi', '"github.com/bytedance/sonic"'),
  'fsutil/open_linux.go':
    'package fsutil\n\nfunc openWatched(path string) (int, error) {\n\treturn 0, nil\n}\n',
  'fsutil/open_windows.go':
    'package fsutil\n\nfunc openWatched(path string) (int, error) {\n\treturn 1, nil\n}\n',
  // two files of one folder that define one conventional name each, and are not twins
  'hooks/prompt.go': 'package hooks\n\nfunc registerHooks() {\n\tprintln("prompt")\n}\n',
  'hooks/snippet.go': 'package hooks\n\nfunc registerHooks() {\n\tprintln("snippet")\n}\n',
  'render/render.go':
    'package render\n\nimport "example.com/app/codec/json"\n\nfunc Render(v any) ([]byte, error) {\n\tb, err := json.API.Marshal(v)\n\tif err != nil {\n\t\treturn json.API.MarshalIndent(v, "", " ")\n\t}\n\t_ = json.API.NewEncoder(nil)\n\t_ = json.API.NewDecoder(nil)\n\t_ = json.API.Unmarshal(b, v)\n\treturn b, err\n}\n',
  'server/watch.go':
    'package server\n\nfunc watch(p string) {\n\tfd, _ := openWatched(p)\n\tregisterHooks()\n\t_ = fd\n}\n',
};

describe('the repository map folds build-tag and platform twins', () => {
  let root: string;
  let project: Project;
  before(async () => {
    root = makeTree(GO_FILES);
    project = await openLexical(root);
    await indexProject(project);
  });
  after(async () => {
    await project.close();
    removeTree(root);
  });

  it('shows files of one folder that define the same names once, "also in" the others', async () => {
    const map = await buildRepoMap(project.store, { budget: 4000 });
    const paths = map.entries.map((e) => e.path);
    const json = map.entries.find((e) => e.path === 'codec/json/json.go');
    assert.ok(json, paths.join(' '));
    assert.deepEqual(json.twins, ['codec/json/go_json.go', 'codec/json/sonic.go']);
    assert.ok(
      !paths.includes('codec/json/go_json.go') && !paths.includes('codec/json/sonic.go'),
      paths.join(' '),
    );
    assert.match(map.text, /^codec\/json\/json\.go \(also in go_json\.go, sonic\.go\):$/m);
    // the interface file beside them defines other names: not a twin
    assert.ok(paths.includes('codec/json/api.go'));
    // a platform pair with one function each
    const open = map.entries.find((e) => e.path === 'fsutil/open_linux.go');
    assert.deepEqual(open?.twins, ['fsutil/open_windows.go']);
    // one conventional name in two files named apart: two entries
    assert.ok(paths.includes('hooks/prompt.go') && paths.includes('hooks/snippet.go'), paths.join(' '));
    assert.equal(map.entries.find((e) => e.path === 'hooks/prompt.go')?.twins, undefined);
  });

  it('folds them in rankDefinitions too', async () => {
    const defs = await project.store.allDefinitions();
    const refs = await project.store.references!.useCounts([...new Set(defs.map((d) => d.name))]);
    const ranked = rankDefinitions({ defs, refs });
    const json = ranked.find((e) => e.path === 'codec/json/json.go');
    assert.deepEqual(json?.twins, ['codec/json/go_json.go', 'codec/json/sonic.go']);
    assert.ok(!ranked.some((e) => e.path === 'codec/json/sonic.go'));
  });
});

const PY_SESSION = `import typing


class Session:
    """A session."""

    @property
    def request(self) -> "Request":
        return self._request

    @request.setter
    def request(self, value: "Request") -> None:
        self._request = value

    @retry(
        times=3,
        backoff=0.5,
    )
    def send_request(
        self,
        method: str,
        url: str,  # the full address
        *,
        timeout: float = 10.0,
    ) -> "Response":
        return self.request.send(method, url)
`;

describe('the repository map prints whole signatures', () => {
  let root: string;
  let project: Project;
  before(async () => {
    root = makeTree({
      'client/session.py': PY_SESSION,
      'client/use.py':
        'from client.session import Session\n\n\ndef fetch(s: Session):\n    s.request = None\n    return s.send_request("GET", "/")\n\n\ndef again(s: Session):\n    return s.send_request("GET", "/x") or s.request\n',
    });
    project = await openLexical(root);
    await indexProject(project);
  });
  after(async () => {
    await project.close();
    removeTree(root);
  });

  it('joins a multi-line signature onto one line, and puts its decorators above it', async () => {
    const map = await buildRepoMap(project.store, { budget: 2000 });
    const block = map.text.slice(map.text.indexOf('client/session.py:'));
    assert.match(
      block,
      /^19│ {4}def send_request\(self, method: str, url: str, \*, timeout: float = 10\.0\) -> "Response":$/m,
      block,
    );
    assert.match(block, /^15│ {4}@retry\(times=3, backoff=0\.5\)\n19│/m, block);
    // the getter's decorator stands above it, and the setter (the same name) is not shown again
    assert.match(block, /^ 7│ {4}@property\n 8│ {4}def request\(self\) -> "Request":$/m, block);
    assert.doesNotMatch(block, /@request\.setter/);
    // a decorator never stands in the signature's place: every decorator row is followed by a signature row
    const rows = block.split('\n');
    rows.forEach((row, i) => {
      if (/│\s*@/.test(row)) assert.match(rows[i + 1] ?? '', /│\s*(@|def |class )/, block);
    });
  });

  it('reads a signature past a decorator that spans lines and spells the name, and past comments', () => {
    const text = [
      '@util.create_proxy_methods(',
      '    Connection,',
      '    "AsyncConnection",',
      '    methods=[],',
      ')',
      '# "Class has incompatible disjoint bases"',
      'class AsyncConnection(  # type:ignore[misc]',
      '    ProxyComparable[Connection],',
      '    StartableContext["AsyncConnection"],',
      '):',
      '    pass',
    ].join('\n');
    const sig = signatureAt(linesOf(text), 1, 'AsyncConnection', 'class', 'engine.py')!;
    assert.equal(sig.line, 7);
    assert.equal(sig.end, 10);
    assert.equal(
      sig.text,
      'class AsyncConnection(ProxyComparable[Connection], StartableContext["AsyncConnection"]):',
    );
    assert.deepEqual(
      sig.decorators.map((d) => [d.line, d.text]),
      [[1, '@util.create_proxy_methods(Connection, "AsyncConnection", methods=[])']],
    );
  });

  it('joins Go and Rust parameter lists, and bounds what it joins', () => {
    const go =
      'func (c *Context) Render(\n\tcode int,\n\tr render.Render, // what to write\n) (int, error) {\n\treturn 0, nil\n}';
    assert.equal(
      signatureAt(linesOf(go), 1, 'Render', 'method', 'context.go')?.text,
      'func (c *Context) Render(code int, r render.Render) (int, error) {',
    );
    const rust =
      "pub fn apply<'a>(\n    doc: &'a mut Document,\n    view: ViewId,\n) -> Option<&'a str> {\n    None\n}";
    assert.equal(
      signatureAt(linesOf(rust), 1, 'apply', 'function', 'src/doc.rs')?.text,
      "pub fn apply<'a>(doc: &'a mut Document, view: ViewId) -> Option<&'a str> {",
    );
    const long = `def configure(\n${Array.from({ length: 40 }, (_, i) => `    option_number_${i}: int = ${i},`).join('\n')}\n):`;
    const sig = signatureAt(linesOf(long), 1, 'configure', 'function', 'x.py')!;
    assert.ok(sig.text.length <= 161 && sig.text.endsWith('…'), sig.text);
    // a constant's brackets are its value, not its signature
    const table = 'ROUTES = [\n    "a",\n    "b",\n]';
    assert.equal(signatureAt(linesOf(table), 1, 'ROUTES', 'constant', 'x.py')?.text, 'ROUTES = [');
  });
});

describe('the repository map ranks by use', () => {
  let root: string;
  let project: Project;
  before(async () => {
    const users: Record<string, string> = {};
    for (let i = 0; i < 6; i++)
      users[`src/feature${i}.ts`] =
        `import { resolveWidgetTree } from './widgets';\nexport function feature${i}Entry(): number {\n  return resolveWidgetTree(${i}).length;\n}\n`;
    root = makeTree({
      ...users,
      // first by name, defined and never used
      'src/aaa_helpers.ts':
        'export function aardvarkHelper(): number {\n  return 1;\n}\nexport function abacusHelper(): number {\n  return 2;\n}\n',
      // used by every feature: first, and its used definition before its unused ones
      'src/widgets.ts':
        'export function alphaUnusedWidget(): number {\n  return 0;\n}\nexport function betaUnusedWidget(): number {\n  return 0;\n}\nexport function resolveWidgetTree(n: number): number[] {\n  return [n];\n}\n',
      // matched by a question's words, not by use
      'src/routing/tree.ts':
        'export function addRoute(path: string): void {\n  void path;\n}\nexport function matchRoutePath(path: string): boolean {\n  return path.length > 0;\n}\n',
    });
    project = await openLexical(root);
    await indexProject(project);
  });
  after(async () => {
    await project.close();
    removeTree(root);
  });

  it('puts the heavily referenced file first, and its referenced definition first', async () => {
    const map = await buildRepoMap(project.store, { budget: 4000 });
    assert.equal(map.entries[0]?.path, 'src/widgets.ts', map.entries.map((e) => e.path).join(' '));
    assert.equal(map.entries[0]!.defs[0]!.name, 'resolveWidgetTree');
    const order = map.entries.map((e) => e.path);
    assert.ok(order.indexOf('src/widgets.ts') < order.indexOf('src/aaa_helpers.ts'));
  });

  it('leans toward the files a question is about, by their paths and definitions', async () => {
    const plain = await buildRepoMap(project.store, { budget: 4000 });
    const asked = await buildRepoMap(project.store, {
      budget: 4000,
      mentions: questionMentions('how are routes matched?'),
    });
    const at = (m: typeof plain) => m.entries.findIndex((e) => e.path === 'src/routing/tree.ts');
    assert.ok(at(asked) === 0 && at(plain) > 0, `${at(plain)} → ${at(asked)}`);
    // the definition that spells the question's words leads the file's list
    assert.equal(asked.entries[0]!.defs[0]!.name, 'matchRoutePath');
  });

  it('leans toward the files already in the context', async () => {
    const plain = await buildRepoMap(project.store, { budget: 4000 });
    const focused = await buildRepoMap(project.store, { budget: 4000, focus: ['src/aaa_helpers.ts'] });
    const at = (m: typeof plain) => m.entries.findIndex((e) => e.path === 'src/aaa_helpers.ts');
    assert.ok(at(focused) < at(plain), `${at(plain)} → ${at(focused)}`);
  });
});

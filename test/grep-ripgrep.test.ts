// quarry grep against ripgrep on the same working tree, after edits the index has not seen: a modified file, a
// deleted one, new files (one in a new folder, one binary, one in an ignored folder), a hidden folder. The answer must
// be ripgrep's, line for line, for every option the two share. ripgrep comes from Debian's package
// (scripts/install-test-tools.sh, part of scripts/test.sh).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeTree, removeTree, runCli, writeFiles } from './helpers.ts';

const rgFound = spawnSync('rg', ['--version'], { encoding: 'utf8' }).status === 0;
if (!rgFound && process.env.CI)
  throw new Error('ripgrep is missing: scripts/install-test-tools.sh installs it (apt-get install ripgrep)');

/**
 * ripgrep with the output shape quarry's grep prints: line numbers, no headings, no colour, in path order. quarry
 * never reads version control's folder nor its own (`.quarry/`, whose walk.json names the tree's paths), which
 * ripgrep 13 searches with --hidden.
 */
function rg(args: string[], cwd: string): string {
  const git = args.includes('--hidden') ? ['-g', '!.git/', '-g', '!.quarry/'] : [];
  const r = spawnSync('rg', ['-n', '--no-heading', '--color', 'never', '--sort', 'path', ...git, ...args], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'], // a readable stdin is what ripgrep searches when given no path
  });
  assert.ok(r.status === 0 || r.status === 1, `rg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

describe(
  'quarry grep equals ripgrep on an edited working tree',
  { skip: !rgFound && 'ripgrep is not installed' },
  () => {
    let root: string;
    before(() => {
      root = makeTree({
        '.gitignore': 'generated/\n*.log\n!keep.log\n',
        'src/server/http.ts':
          "import { route } from './routes';\nexport function listen(port: number) {\n  // TODO: handle errors\n  return route('GET /health', port);\n}\n",
        'src/server/routes.ts':
          "export function route(path: string, port: number) {\n  const handler = lookup(path);\n  if (!handler) throw new Error('no route: ' + path);\n  return handler(port);\n}\n\nfunction lookup(path: string) {\n  return undefined as unknown as ((p: number) => string) | undefined;\n}\n",
        'src/server-utils.ts': 'export const route_prefix = "/api";\n// route helpers live here\n',
        'src/parse/config.py':
          'import os\n\n\ndef parse_config(path):\n    """Read the config; TODO: validate it."""\n    with open(path) as f:\n        return f.read()\n\n\nclass ConfigError(Exception):\n    pass\n',
        'src/parse/old.py': 'def route_legacy():\n    return "route"\n',
        'docs/guide.md': '# Guide\n\nCall `route()` to add a handler. Errors are thrown.\n\nTODO: more\n',
        'notes/ünïcode.txt': 'Zoë routes the café orders\nROUTE in capitals\n',
        '.github/workflows/ci.yml':
          'on: push\njobs:\n  test:\n    steps:\n      - run: npm test # route check\n',
        'generated/out.js': 'const route = "generated";\n',
        'keep.log': 'route kept in a log\n',
      });
      // a git repository, as ripgrep reads .gitignore only inside one
      assert.equal(spawnSync('git', ['init', '-q'], { cwd: root }).status, 0);
      assert.equal(runCli(['index', '--no-embed', '--quiet'], { cwd: root }).code, 0);
      // the edits the index has not seen
      writeFiles(root, {
        'src/server/http.ts':
          "import { route } from './routes';\nexport function listen(port: number, host = 'localhost') {\n  // handled: errors go to the caller\n  return route('GET /health', port) + host;\n}\n",
        'src/fresh/new-module.ts': "export const freshRoute = 'route added after the index';\n",
        'src/parse/added.py': 'def route_added():\n    # TODO: fill in\n    return None\n',
        'generated/new.js': 'route generated later\n',
      });
      writeFileSync(join(root, 'src', 'blob.dat'), Buffer.from([0x72, 0x6f, 0x75, 0x74, 0x65, 0, 1, 2, 3]));
      rmSync(join(root, 'src', 'parse', 'old.py'));
    });
    after(() => removeTree(root));

    const cases: string[][] = [
      ['route'],
      ['-F', 'route('],
      ['-i', 'route'],
      ['-w', 'route'],
      ['TODO'],
      ['-c', 'route'],
      ['-o', 'rout[a-z]*'],
      ['-l', 'route'],
      ['-C', '1', 'handler'],
      ['-A', '2', 'def '],
      ['-B', '1', 'return'],
      ['-m', '1', 'route'],
      ['-g', '*.py', 'route'],
      ['-g', '!*.md', '-i', 'todo'],
      ['--hidden', 'route'],
      ['--hidden', '-l', 'push'],
      ['--no-ignore', 'route'],
      ['--hidden', '--no-ignore', '-c', 'route'],
      ['caf.', 'notes'],
      ['errors'],
      ['health', 'src/server'],
      // under a path: the walk goes down to it alone, and still sees what changed there (new, edited, deleted)
      ['route', 'src/parse'],
      ['-l', 'route', 'src/fresh', 'src/server/http.ts'],
      ['--no-ignore', 'route', 'generated'],
    ];
    for (const args of cases)
      it(`quarry grep ${args.join(' ')}`, () => {
        const q = runCli(['grep', '--color', 'never', ...args], { cwd: root });
        assert.ok(q.code === 0 || q.code === 1, q.stderr);
        assert.equal(q.stdout, rg(args, root));
      });

    it('lists the same files (--files, with and without --hidden)', () => {
      assert.equal(runCli(['grep', '--files'], { cwd: root }).stdout, rg(['--files'], root));
      assert.equal(
        runCli(['grep', '--files', '--hidden'], { cwd: root }).stdout,
        rg(['--files', '--hidden'], root),
      );
    });

    it('searches under the folder it is run from, as ripgrep does', () => {
      const sub = join(root, 'src', 'parse');
      for (const args of [['route'], ['-c', 'TODO'], ['route', '../server']]) {
        const q = runCli(['grep', '--color', 'never', ...args], { cwd: sub });
        assert.equal(q.stdout, rg(args, sub), args.join(' '));
      }
      const wide = runCli(['grep', '--color', 'never', '--project-wide', '-l', 'TODO'], { cwd: sub });
      assert.deepEqual(wide.stdout.trim().split('\n'), ['../../docs/guide.md', 'added.py', 'config.py']);
    });

    it('says in --json how much it read from disk, and the edits reach nothing else until re-indexed', () => {
      const json = JSON.parse(runCli(['grep', '--json', 'route'], { cwd: root }).stdout);
      // modified http.ts, new-module.ts, added.py, blob.dat; old.py gone
      assert.deepEqual(json.fromDisk, { changed: 4, deleted: 1 });
      assert.equal(json.notSearched?.binary, 1);
      const status = JSON.parse(runCli(['status', '--json'], { cwd: root }).stdout);
      assert.deepEqual(status.pending, { added: 3, modified: 1, deleted: 1 });
    });
  },
);

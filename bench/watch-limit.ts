// The watcher on a tree with more folders than the system lets one user watch (docs/benchmarks.md).
//
//   sudo node --import tsx bench/watch-limit.ts [--folders 3000] [--limit 500]
//
// Needs root: it lowers fs.inotify.max_user_watches to --limit for the run (and puts the old value back), builds a
// tree of --folders folders, starts `quarry watch` on it and checks that it says in one line that it polls instead,
// does not crash, and finds a saved file's new word by polling. Run it alone: the lowered limit applies to every
// process of the user meanwhile.

import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openProject, searchProject } from '../src/project/local/index.ts';
import { CLI, makeTree } from '../test/helpers.ts';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return Number(i >= 0 ? args[i + 1] : fallback);
};
const FOLDERS = arg('folders', '3000');
const LIMIT = arg('limit', '500');
const SYSCTL = '/proc/sys/fs/inotify/max_user_watches';

const root = makeTree({});
for (let i = 0; i < FOLDERS; i++) {
  const dir = join(root, `pkg${Math.floor(i / 100)}`, `mod${i}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'index.ts'), `export function handler${i}() {\n  return ${i};\n}\n`);
}
const env = {
  ...process.env,
  NO_COLOR: '1',
  QUARRY_EMBED: 'none',
  XDG_CONFIG_HOME: join(tmpdir(), 'quarry-no-config'),
};
const before = readFileSync(SYSCTL, 'utf8').trim();
writeFileSync(SYSCTL, String(LIMIT));
let out = '';
let err = '';
const started = performance.now();
const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), CLI, 'watch', '--init'], {
  cwd: root,
  env,
  stdio: ['ignore', 'pipe', 'pipe'],
});
child.stdout.on('data', (d) => {
  out += d;
});
child.stderr.on('data', (d) => {
  err += d;
});
try {
  // indexed (the first sync), then a save found by polling
  for (; !/synced/.test(out); ) {
    if (child.exitCode !== null) throw new Error(`quarry watch exited ${child.exitCode}: ${err}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const indexedMs = performance.now() - started;
  writeFileSync(SYSCTL, before); // the rest needs no lowered limit
  const word = `zzpolled${Date.now().toString(36)}`;
  const saved = performance.now();
  writeFileSync(join(root, 'pkg0', 'mod0', 'index.ts'), `export function ${word}() {}\n`);
  const project = await openProject({ root, overrides: { embed: { provider: 'none' } } });
  let foundMs = -1;
  for (let i = 0; i < 600; i++) {
    const r = await searchProject(project, word, { mode: 'lexical', topK: 1 });
    if (r.results.length) {
      foundMs = performance.now() - saved;
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await project.close();
  console.log(
    JSON.stringify({
      folders: FOLDERS,
      limit: LIMIT,
      notice: err.trim(),
      polling: /^polling /m.test(out),
      alive: child.exitCode === null,
      exit: child.exitCode,
      stdout: out.trim().split('\n').slice(-3),
      indexedMs: Math.round(indexedMs),
      saveFoundMs: Math.round(foundMs),
    }),
  );
} finally {
  writeFileSync(SYSCTL, before);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rmSync(root, { recursive: true, force: true });
}

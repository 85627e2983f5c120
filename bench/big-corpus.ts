// Assembles a corpus of --files files from bare git repositories (docs/benchmarks.md, "100,000 files").
//
//   node --import tsx bench/big-corpus.ts --from <folder of owner+name/repo bare git dirs> --to <dir> [--files 100000]
//
// Each repository's HEAD goes to <dir>/<owner+name>/ (`git archive`), in name order, until the corpus holds
// --files files; if every HEAD together holds fewer, further passes add each repository as it was two and four years
// before its HEAD (<dir>/<owner+name>@old/, @older/): other real trees of the same projects. The practice sets' repositories and the
// reserved ones (train/mine_corpus.py) are never used.

import { execFileSync, execSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const arg = (name: string, fallback?: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const from = arg('from');
const to = arg('to');
const TARGET = Number(arg('files', '100000'));
if (!from || !to) {
  console.error('usage: big-corpus.ts --from <mirrors> --to <dir> [--files 100000]');
  process.exit(2);
}

// the names train/mine_corpus.py refuses: practice sets and the reserved list
const miner = readFileSync(join(import.meta.dirname, '..', 'train', 'mine_corpus.py'), 'utf8');
const listed = (name: string) =>
  (new RegExp(`${name} = (?:set\\()?("""|\\{)([\\s\\S]*?)("""|\\})`).exec(miner)?.[2] ?? '')
    .replace(/"/g, ' ')
    .split(/[\s,]+/)
    .filter((s) => s.includes('/'));
const forbidden = new Set([...listed('PRACTICE'), ...listed('RESERVED')].map((r) => r.toLowerCase()));
if (forbidden.size < 50) throw new Error('could not read the reserved list from train/mine_corpus.py');

const repos = readdirSync(from)
  .filter((d) => existsSync(join(from, d, 'repo')) && !forbidden.has(d.replace('+', '/').toLowerCase()))
  .sort();
mkdirSync(to, { recursive: true });
const count = () =>
  Number(
    execSync(`find ${JSON.stringify(to)} -type f | wc -l`)
      .toString()
      .trim(),
  );
let files = count();
const YEARS = { HEAD: 0, old: 2, older: 4 } as const;
for (const pass of ['HEAD', 'old', 'older'] as const)
  for (const r of repos) {
    if (files >= TARGET) break;
    const git = join(from, r, 'repo');
    const dest = join(to, pass === 'HEAD' ? r : `${r}@${pass}`);
    if (existsSync(dest)) continue;
    let rev = 'HEAD';
    if (pass !== 'HEAD') {
      const head = Number(
        execFileSync('git', ['--git-dir', git, 'log', '-1', '--format=%ct', 'HEAD']).toString(),
      );
      rev = execFileSync('git', [
        '--git-dir',
        git,
        'rev-list',
        '-1',
        `--before=${head - YEARS[pass] * 365 * 86400}`,
        'HEAD',
      ])
        .toString()
        .trim();
      if (!rev) continue;
    }
    mkdirSync(dest, { recursive: true });
    try {
      execSync(`git --git-dir=${JSON.stringify(git)} archive ${rev} | tar -x -C ${JSON.stringify(dest)}`, {
        stdio: ['ignore', 'ignore', 'ignore'],
        shell: '/bin/bash',
        env: { ...process.env, SHELLOPTS: 'pipefail' },
      });
    } catch {
      // a partial mirror (blobs left out when it was fetched): not a whole tree, left out
      rmSync(dest, { recursive: true, force: true });
      continue;
    }
    files = count();
    console.error(`${dest.slice(to.length + 1)}: ${files} files`);
  }
console.log(JSON.stringify({ corpus: to, files, repositories: repos.length }));

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { QuarryError } from '../errors.ts';
import { indexProject, openProject } from '../project/local/index.ts';
import type { SearchMode } from '../search/search.ts';
import { commitQuery, isSourceFile } from './commits.ts';
import { type EvalQuery, type EvalResult, runEval } from './eval.ts';

/**
 * `quarry eval --git`: how well quarry retrieves on the user's own repository. The snapshot N first-parent commits
 * back is copied into a temporary folder (`git archive`: the checkout, its index and its history are never touched),
 * indexed there, and each commit after it that the practice sets would keep (1–4 source files changed, all present
 * at the snapshot, a descriptive message) is asked as a query whose answer is the files it changed.
 */
export interface GitEvalOptions {
  /** The checkout. */
  root: string;
  /** First-parent commits to go back. */
  commits: number;
  modes: SearchMode[];
  topK?: number;
  onStage?: (message: string) => void;
  onQuery?: (done: number, total: number) => void;
}

export interface GitEvalResult extends EvalResult {
  snapshot: string;
  /** Commits after the snapshot, and why those not asked were left out. */
  considered: number;
  rejected: Record<string, number>;
}

function git(root: string, args: string[]): string {
  const r = spawnSync('git', ['-C', root, ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.error || r.status !== 0)
    throw new QuarryError(
      'BAD_INPUT',
      `git ${args[0]} failed in ${root}: ${(r.stderr || String(r.error ?? '')).trim().split('\n')[0]} (eval --git needs a git checkout with history)`,
    );
  return r.stdout;
}

/** The commits after the snapshot that make queries, by the practice sets' rules. */
export function gitQueries(
  root: string,
  commits: number,
): { snapshot: string; queries: EvalQuery[]; considered: number; rejected: Record<string, number> } {
  const line = git(root, ['rev-list', '--first-parent', `--max-count=${commits + 1}`, 'HEAD'])
    .split('\n')
    .filter(Boolean);
  if (line.length < 2)
    throw new QuarryError(
      'BAD_INPUT',
      `${root} has no history to ask: eval --git needs commits after a snapshot`,
    );
  const snapshot = line.at(-1)!;
  const after = line.slice(0, -1).reverse();
  const atSnapshot = new Set(git(root, ['ls-tree', '-r', '--name-only', snapshot]).split('\n'));
  const rejected: Record<string, number> = {};
  const reject = (why: string) => {
    rejected[why] = (rejected[why] ?? 0) + 1;
  };
  const queries: EvalQuery[] = [];
  const repo = basename(root);
  for (const c of after) {
    const parents = git(root, ['rev-list', '--parents', '-n', '1', c]).trim().split(' ').slice(1);
    if (parents.length !== 1) {
      reject('merge');
      continue;
    }
    const changed = git(root, ['diff-tree', '-r', '-M', '--no-commit-id', '--name-status', parents[0]!, c])
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('\t'));
    const source = changed.filter(([, ...paths]) => paths.some(isSourceFile));
    if (source.some(([status, path]) => status !== 'M' || !atSnapshot.has(path!))) {
      reject('source file added, deleted, renamed or absent at the snapshot');
      continue;
    }
    if (source.length < 1 || source.length > 4) {
      reject(source.length ? 'more than 4 source files' : 'no source file');
      continue;
    }
    const query = commitQuery(git(root, ['log', '-1', '--format=%B', c]));
    if (!query) {
      reject('message not descriptive (or a sweep, release, revert)');
      continue;
    }
    queries.push({ id: c.slice(0, 12), repo, snapshot, query, gold: source.map(([, p]) => p!).sort() });
  }
  return { snapshot, queries, considered: after.length, rejected };
}

/** Asks the history after a snapshot against an index of that snapshot, built in a temporary folder. */
export async function evalGitHistory(options: GitEvalOptions): Promise<GitEvalResult> {
  const { snapshot, queries, considered, rejected } = gitQueries(options.root, options.commits);
  if (!queries.length)
    throw new QuarryError(
      'BAD_INPUT',
      `none of the last ${considered} commits makes a query (1–4 source files changed, a descriptive message): try a larger --commits`,
    );
  const tree = mkdtempSync(join(tmpdir(), 'quarry-eval-git-'));
  try {
    options.onStage?.(`copying the snapshot ${snapshot.slice(0, 12)} (${considered} commits back)`);
    const copy = spawnSync(
      'sh',
      ['-c', 'git -C "$1" archive --format=tar "$2" | tar -x -C "$3"', 'sh', options.root, snapshot, tree],
      {
        encoding: 'utf8',
      },
    );
    if (copy.status !== 0)
      throw new QuarryError('BAD_INPUT', `could not copy the snapshot: ${copy.stderr.trim().split('\n')[0]}`);
    options.onStage?.(`indexing the snapshot in ${tree}`);
    // the copy gets its own SQLite index, whatever store the checkout uses: a team's store is never written to
    const project = await openProject({
      root: tree,
      create: true,
      overrides: { store: { driver: 'sqlite' } },
    });
    try {
      await indexProject(project, { embed: options.modes.some((m) => m !== 'lexical') });
    } finally {
      await project.close();
    }
    const result = await runEval(queries, {
      root: tree,
      modes: options.modes,
      ...(options.topK ? { topK: options.topK } : {}),
      ...(options.onQuery ? { onQuery: options.onQuery } : {}),
    });
    return { ...result, snapshot, considered, rejected };
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
}

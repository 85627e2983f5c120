import type { QuarryConfig } from '../../config/config.ts';
import { indexRepository } from '../../indexing/indexer.ts';
import { watcherElsewhere } from '../../store/lock.ts';
import { storeTarget, storeTraits } from '../../store/open.ts';
import { type EmbeddingStatus, embeddingStatusOf } from '../../store/types.ts';
import { type DeltaOptions, gitRecords, treeDelta } from '../../workspace/delta.ts';
import { gitHead, indexPaths } from '../../workspace/root.ts';
import { folderMemoFile } from '../../workspace/walk-cache.ts';
import type { LocalProject } from '../types.ts';

/** A walk of the working tree with the folders the last walk remembered. */
export function memoOf(root: string, config: QuarryConfig): Pick<DeltaOptions, 'memoFile'> {
  const memoFile = folderMemoFile(root, config);
  return memoFile ? { memoFile } : {};
}

/** Most changed files a search indexes itself (their words, not yet their vectors) before it answers. */
const CATCH_UP_FILES = 24;
/** How long a freshness verdict stands (a search a second asks the store and `.git` once). */
const FRESHNESS_MS = 2000;

/** What a catch-up with the working tree says: nothing, or why results may miss changes. */
type CatchUp = { note?: string } | undefined;
/**
 * Why results may be stale, or `vectors`: nothing else to say, so a search that uses vectors asks how many files have
 * them (a count over every file: 38 ms on a 93k-file index, which a lexical search does not pay).
 */
type Staleness = { note: string } | 'vectors' | undefined;
/** An answer asked at `at` (performance.now()), that stands for FRESHNESS_MS. */
type Seen<T> = { at: number; answer: Promise<T> };

/**
 * A count with commas between its thousands (93,089). `toLocaleString` would load ICU's number formatting the first
 * time, ~26 ms of a one-shot search on a large tree, the one that prints this note.
 */
const thousands = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/**
 * How fresh one opened project's index is, and its catch-up with the working tree: held by the project (state.ts),
 * with the verdicts it asked lately (each stands FRESHNESS_MS) and the watcher that keeps it fresh, if one does.
 */
export class Freshness {
  private readonly project: LocalProject;
  /** Whether a watcher in this process has nothing pending (keptBy); undefined while none watches. */
  private keeper: (() => boolean) | undefined;
  private caughtUp: Seen<CatchUp> | undefined;
  private embedding: Seen<EmbeddingStatus> | undefined;
  private staleness: Seen<Staleness> | undefined;

  constructor(project: LocalProject) {
    this.project = project;
  }

  /**
   * A watcher in this process keeps the project's index fresh: while `quiet()` says it has nothing pending, a search
   * or a grep trusts the index instead of walking the tree (see keptFreshBy).
   */
  keptBy(quiet: () => boolean): void {
    this.keeper = quiet;
  }

  /**
   * Whether a watcher here has the index up to date with the tree right now: it has nothing pending, and no writer is
   * at work (a start-up run that brings in what changed while nothing watched).
   */
  async watchedAndQuiet(): Promise<boolean> {
    if (!(this.keeper?.() ?? false)) return false;
    return !(await this.project.store.activeWriter());
  }

  /**
   * The working tree is the truth for search too: files changed since the last index (modified, new, deleted) are
   * found by a walk, and when they are few they are indexed lexically before the search runs (each file in its own
   * transaction, under the writer lock, which is never waited for); their vectors come with the next `quarry index`.
   * When they are many, or another writer holds the index, the answer says how many files are pending. An index over
   * `search.walkFiles` files is not walked (a walk of 10k files costs about 100 ms; a watcher keeps such a tree
   * fresh), and its answer says that edits are not looked for. Asked at most every FRESHNESS_MS.
   */
  catchUp(): Promise<CatchUp> {
    const seen = this.caughtUp;
    if (seen && performance.now() - seen.at < FRESHNESS_MS) return seen.answer;
    const answer = this.catchUpNow().catch(() => undefined);
    this.caughtUp = { at: performance.now(), answer };
    return answer;
  }

  /** The index's embedding status, asked at most every FRESHNESS_MS (a count over the vector tables). */
  embeddingNow(): Promise<EmbeddingStatus> {
    const seen = this.embedding;
    if (seen && performance.now() - seen.at < FRESHNESS_MS) return seen.answer;
    const answer = embeddingStatusOf(this.project.store);
    this.embedding = { at: performance.now(), answer };
    return answer;
  }

  /** One line when a search's results may be stale, else undefined (cheap: meta values and `.git` files). */
  async staleNote(dense: boolean): Promise<string | undefined> {
    let seen = this.staleness;
    if (!seen || performance.now() - seen.at >= FRESHNESS_MS) {
      seen = { at: performance.now(), answer: this.stalenessNow().catch(() => undefined) };
      this.staleness = seen;
    }
    const v = await seen.answer;
    if (v !== 'vectors') return v?.note;
    if (!dense) return undefined;
    const e = await this.embeddingNow();
    return e.embedder && e.coarse < e.files
      ? `vectors cover ${e.coarse} of ${e.files} files so far: the rest are found by their words alone`
      : undefined;
  }

  private async catchUpNow(): Promise<CatchUp> {
    const { project } = this;
    const { store, root, config } = project;
    if (project.location !== root || (await this.watchedAndQuiet())) return undefined;
    // a shared index (PostgreSQL, Chroma: a team's) is never written by a reader's search: it stays as its own
    // `quarry index` built it, and the working tree reaches a search through a local overlay (project/overlay.ts)
    if (storeTraits(storeTarget(config, root)).keyed) return undefined;
    const most = config.search.walkFiles;
    if (most === 0) return undefined;
    // said only when nothing keeps the index fresh: no watcher here (a busy one), none in another process
    const unwalked = (n: number) =>
      this.keeper !== undefined || watcherElsewhere(indexPaths(root).dir)
        ? undefined
        : {
            note: `edits since the last index are not looked for in a tree of ${thousands(n)} files without a watcher: keep \`quarry watch\` or \`quarry serve\` running (or run \`quarry index\` after editing)`,
          };
    // the last full walk's count says it without listing 100,000 files (an index from before it was kept: listed)
    const treeFiles = Number((await store.getMeta('tree_files')) ?? 0);
    if (treeFiles > most) return unwalked(treeFiles);
    const memo = memoOf(root, config);
    // in a git checkout, git says which tracked files changed while the index's files are listed
    const git = gitRecords(root, treeFiles, memo.memoFile);
    const files = await store.listFiles();
    if (files.length > most) return unwalked(files.length);
    const recorded = await (git ?? gitRecords(root, files.length, memo.memoFile));
    const { changed, gone } = treeDelta(root, config, files, {
      ...memo,
      ...(recorded ? { git: recorded } : {}),
    });
    const paths = [...changed.keys(), ...gone];
    if (!paths.length) return undefined;
    const pending = `${paths.length} file${paths.length === 1 ? '' : 's'} changed since the last index`;
    if (paths.length > CATCH_UP_FILES)
      return {
        note: `${pending}: results may miss ${paths.length === 1 ? 'it' : 'them'} (run \`quarry index\`, or keep \`quarry watch\` running)`,
      };
    if (await store.activeWriter())
      return { note: `${pending}, and the index is being updated: results may miss the latest changes` };
    try {
      await indexRepository({ root, config, store, paths, workers: 0, lockWaitMs: 0 });
      return undefined;
    } catch {
      return {
        note: `${pending}: results may miss ${paths.length === 1 ? 'it' : 'them'} (run \`quarry index\`)`,
      };
    }
  }

  private async stalenessNow(): Promise<Staleness> {
    const { store, root } = this.project;
    const run = JSON.parse((await store.getMeta('run')) ?? '{}') as {
      startedAt?: number;
      finishedAt?: number;
      pending?: number;
    };
    // a writer that found nothing to change (a start-up sync of an index that is up to date) updates nothing: only a
    // run with files to re-read makes results stale
    if (await store.activeWriter())
      return run.startedAt && !run.finishedAt && (run.pending ?? 1) > 0
        ? { note: 'the index is being updated: results may miss the latest changes' }
        : undefined;
    if (run.startedAt && !run.finishedAt)
      return {
        note: 'the last index run was interrupted: results may miss changes (run `quarry index` to finish it)',
      };
    // a checkout here that moved on since (a pull, a branch switch): the index is of another commit
    if (this.project.location === root) {
      const built = (
        JSON.parse((await store.getMeta('source')) ?? '{}') as { git?: { commit?: string | null } }
      ).git?.commit;
      const head = gitHead(root)?.commit;
      if (built && head && built !== head)
        return {
          note: `the checkout moved from ${built.slice(0, 12)} to ${head.slice(0, 12)} since the last index: results may be stale (run \`quarry index\`, or keep \`quarry watch\` running)`,
        };
    }
    return 'vectors';
  }
}

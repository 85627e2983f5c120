import type { RerankerKeep } from '../../rerank/open.ts';
import type { LocalProject } from '../types.ts';
import { Freshness } from './freshness.ts';

/**
 * What an opened project keeps between calls: how fresh its index is and its catch-up with the working tree
 * (freshness.ts), and the model its LLM reranker ranks with (rerank/open.ts). openProject gives each project it opens
 * its own; the project holds it, under a key of its own that no listing of the project's fields shows.
 */
export class ProjectState {
  readonly freshness: Freshness;
  readonly reranker: RerankerKeep = {};

  constructor(project: LocalProject) {
    this.freshness = new Freshness(project);
  }
}

const STATE = Symbol('quarry.projectState');

type Holder = LocalProject & { readonly [STATE]?: ProjectState };

/**
 * The state `project` holds. An object that holds none of its own is given its own on first use: one openProject
 * did not make, or one made from an opened project (an overlay is `Object.create(local)`), which would otherwise read
 * its prototype's; so each object keeps its own verdicts and its own watcher, as it always has.
 */
export function stateOf(project: LocalProject): ProjectState {
  if (!Object.hasOwn(project, STATE))
    Object.defineProperty(project, STATE, { value: new ProjectState(project), enumerable: false });
  return (project as Holder)[STATE]!;
}

/**
 * A watcher in this process keeps `project`'s index fresh: while `quiet()` says it has nothing pending, a search or a
 * grep trusts the index instead of walking the tree (a walk of 10k files costs about 200 ms, a grep from the index
 * 10–30 ms). The watcher calls this when it starts; a polling fallback does not.
 */
export function keptFreshBy(project: object, quiet: () => boolean): void {
  // a watcher watches a local project (watch/autosync.ts); its state is made here when nothing asked for it yet
  stateOf(project as LocalProject).freshness.keptBy(quiet);
}

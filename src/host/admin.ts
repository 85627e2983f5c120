import { type QuarryConfig, resolveConfig } from '../config/config.ts';
import { openRegistry, resetIndex, type StoreTraits, storeTarget, storeTraits } from '../store/open.ts';

// What a face may know of the store behind a project, and the few things it does to a store as a whole (reset, list
// or remove repositories): asked here, so that no face opens a store or names a driver itself.

/** What the store a project at `root` with `config` lives in is like: a file here? keyed repositories? a registry? */
export function storeTraitsAt(config: QuarryConfig, root: string): StoreTraits {
  return storeTraits(storeTarget(config, root));
}

/** The repositories a store holds, when it holds several (a server store); undefined for a one-repository index. */
export async function openRepoRegistry(root: string) {
  return openRegistry(resolveConfig({ root }), root);
}

/** Where the index of `root` is, said for a person, with what resetting it does there. */
export function indexWhere(root: string): { where: string; resetNote: string } {
  const { where, resetNote } = storeTraitsAt(resolveConfig({ root }), root);
  return { where, resetNote };
}

/** Deletes the index of `root` (its rows in a shared store); false when there was none. */
export function resetProjectIndex(root: string): Promise<boolean> {
  return resetIndex(resolveConfig({ root }), root);
}

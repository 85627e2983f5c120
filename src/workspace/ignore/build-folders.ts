/**
 * Build-output folders under quarry's defaults: skipped while git tracks no source in them, walked when it does. What
 * git tracks is asked of git (`tracked.ts`); when git cannot say, the last verdict it gave stands.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { detectLanguage } from '../languages.ts';
import { gitTracked, recallVerdict, rememberVerdict } from '../tracked.ts';
import { DEFAULTS_SOURCE, type Matcher, type WalkIgnore } from './matcher.ts';

/**
 * Build-output folders that quarry's defaults skip only while git tracks no source file in them: a project's own
 * `build/` scripts (fastify's `build/*.js`, which generate `lib/`) are code to search. `dist/` is not among them: a
 * committed `dist/` is a generated bundle. Vendored folders are skipped whatever git tracks: that is what they are for.
 */
export const BUILD_FOLDERS = new Set(['build', 'out', 'target', 'obj']);

/**
 * The files git tracks under a folder of `root` (repository-relative), or undefined outside a git work tree or when
 * git cannot say (tried twice; a failure is not cached: the next call asks again). Cached for a few seconds.
 */
export function trackedUnder(root: string, dirRel: string): string[] | undefined {
  const t = gitTracked(root, dirRel);
  return 'files' in t ? t.files : undefined;
}

/**
 * How many files git tracks in each path quarry's defaults left out (a folder counts the files under it): what the
 * defaults hid that the project keeps in version control, for `status` and `files --ignored` to name. Paths with
 * none are left out; empty outside a git work tree. One `git ls-files` for the whole tree; when it fails (twice),
 * the counts of the last time it answered.
 */
export function trackedByDefaults(root: string, ignored: readonly WalkIgnore[]): Map<string, number> {
  const out = new Map<string, number>();
  const wanted = ignored.filter((i) => i.rule === DEFAULTS_SOURCE && !/^\.(git|quarry)$/.test(i.path));
  if (!wanted.length || !existsSync(join(root, '.git'))) return out;
  const tracked = gitTracked(root, '');
  if ('none' in tracked) return out;
  if ('error' in tracked) {
    const last = recallVerdict(root, 'tracked by defaults');
    if (last && typeof last === 'object')
      for (const i of wanted) {
        const n = (last as Record<string, unknown>)[i.path];
        if (typeof n === 'number') out.set(i.path, n);
      }
    return out;
  }
  const dirs = new Set(wanted.filter((i) => i.dir).map((i) => i.path));
  const files = new Set(wanted.filter((i) => !i.dir).map((i) => i.path));
  for (const f of tracked.files) {
    if (files.has(f)) out.set(f, 1);
    for (let at = f.indexOf('/'); at > 0; at = f.indexOf('/', at + 1)) {
      const d = f.slice(0, at);
      if (dirs.has(d)) out.set(d, (out.get(d) ?? 0) + 1);
    }
  }
  rememberVerdict(root, 'tracked by defaults', Object.fromEntries(out));
  return out;
}

/** Where a walk's notices go when its caller takes none: stderr, once per folder until git answers again. */
const told = new Set<string>();
function defaultNotice(key: string): (message: string) => void {
  return (m) => {
    if (told.has(key)) return;
    told.add(key);
    process.stderr.write(`quarry: warning: ${m}\n`);
  };
}

/**
 * A default-ignored build folder that git tracks source files in is searched like any other. When git cannot say
 * (tried twice), the last verdict it gave stands, and the notice says so: a failing git never drops a tracked build
 * folder's source from an index, nor adds an untracked one's.
 */
export function liftedBuildFolder(
  root: string,
  m: Matcher | undefined,
  rel: string,
  onNotice?: (message: string) => void,
): boolean {
  if (!m || m.source !== DEFAULTS_SOURCE) return false;
  if (!BUILD_FOLDERS.has(rel.slice(rel.lastIndexOf('/') + 1))) return false;
  const name = `lift ${rel}`;
  const tracked = gitTracked(root, rel);
  if ('none' in tracked) return false;
  if ('files' in tracked) {
    told.delete(`${root}\0${rel}`);
    const lifted = tracked.files.some((f) => detectLanguage(f).grammar !== undefined);
    rememberVerdict(root, name, lifted);
    return lifted;
  }
  const last = recallVerdict(root, name);
  const said = `what git tracks in ${rel}/ could not be read (${tracked.error})`;
  (onNotice ?? defaultNotice(`${root}\0${rel}`))(
    typeof last === 'boolean'
      ? `${said}: ${last ? 'walked' : 'left out'} as last known (git ${last ? 'tracked source in it' : 'tracked no source in it'})`
      : `${said}, and no earlier answer is known: left out by quarry's defaults until git answers`,
  );
  return last === true;
}

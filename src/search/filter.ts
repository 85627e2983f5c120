import type { SearchFilter, Store } from '../store/types.ts';
import { pathLanguages } from '../workspace/languages.ts';
import { underPrefix } from '../workspace/scope.ts';

/**
 * Does a path pass a search filter (the same rules the stores apply in their queries)? `language` is the one the
 * index recorded for the file; without it, the path's name decides, and a `.h` header passes a filter for C or for
 * C++ (inScope reads which it is).
 */
export function passesFilter(path: string, filter: SearchFilter | undefined, language?: string): boolean {
  if (!filter) return true;
  if (filter.excludePaths?.includes(path)) return false;
  if (filter.paths?.length && !filter.paths.includes(path)) return false;
  if (filter.pathPrefixes?.length && !filter.pathPrefixes.some((p) => underPrefix(path, p))) return false;
  const languages = filter.languages;
  if (
    languages?.length &&
    !(language === undefined ? pathLanguages(path) : [language]).some((l) => languages.includes(l))
  )
    return false;
  return true;
}

/**
 * The `paths` that pass `filter`, as the stores' queries would pass them: where the filter names languages and a
 * path's name leaves its language open (a `.h` header, C or C++), the language the index recorded decides (one row
 * read for each such file).
 */
export async function inScope(
  store: Store,
  paths: string[],
  filter: SearchFilter | undefined,
): Promise<string[]> {
  const loose = paths.filter((p) => passesFilter(p, filter));
  if (!filter?.languages?.length) return loose;
  // asked at once: a network store answers them side by side
  const recorded = await Promise.all(
    loose.map((p) =>
      pathLanguages(p).length > 1 ? store.getFile(p).then((f) => f?.language ?? null) : undefined,
    ),
  );
  return loose.filter(
    (p, i) => recorded[i] === undefined || (recorded[i] !== null && passesFilter(p, filter, recorded[i])),
  );
}

/** A prefix as the stores' queries take it: the file it may name (none for a folder's `x/`), and its folder. */
export function prefixParts(prefix: string): { file: string | undefined; folder: string } {
  if (!prefix || prefix.endsWith('/')) return { file: undefined, folder: prefix };
  return { file: prefix, folder: `${prefix}/` };
}

/**
 * Is `path` under `prefix`, a folder or a file named from the repository's root (`--path`, a filter's
 * pathPrefixes)? Whole path segments only: `crates/ignore` holds `crates/ignore/src/lib.rs` and is the file
 * `crates/ignore` itself, but not `crates/ignore-old/…` or `crates/ignored.rs`. An empty prefix, the root, holds
 * everything; one ending in `/` names a folder only. The stores' filters apply the same parts (prefixParts).
 */
export function underPrefix(path: string, prefix: string): boolean {
  const { file, folder } = prefixParts(prefix);
  return path === file || path.startsWith(folder);
}

/**
 * Is a path under any of these prefixes (underPrefix)? Undefined when they hold everything: none given, or the root
 * among them, so that a caller can tell a scoped walk from a whole one.
 */
export function underAny(prefixes: readonly string[] | undefined): ((path: string) => boolean) | undefined {
  if (!prefixes?.length || prefixes.includes('')) return undefined;
  return (path) => prefixes.some((p) => underPrefix(path, p));
}

/**
 * Is `path` under `prefix`, a folder or a file named from the repository's root (`--path`, a filter's
 * pathPrefixes)? Whole path segments only: `crates/ignore` holds `crates/ignore/src/lib.rs` and is the file
 * `crates/ignore` itself, but not `crates/ignore-old/…` or `crates/ignored.rs`. An empty prefix, the root, holds
 * everything; one ending in `/` names a folder only.
 */
export function underPrefix(path: string, prefix: string): boolean {
  if (!prefix) return true;
  if (prefix.endsWith('/')) return path.startsWith(prefix);
  return path.length === prefix.length
    ? path === prefix
    : path.startsWith(prefix) && path.charCodeAt(prefix.length) === 47; /* '/' */
}

/** A prefix as the stores' queries take it: the file it may name (none for a folder's `x/`), and its folder. */
export function prefixParts(prefix: string): { file: string | undefined; folder: string } {
  if (!prefix || prefix.endsWith('/')) return { file: undefined, folder: prefix };
  return { file: prefix, folder: `${prefix}/` };
}

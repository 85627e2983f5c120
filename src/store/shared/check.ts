import { chunkGetsVector } from '../../workspace/roles.ts';

/**
 * The vector half of a store's check(), one rule for every driver that marks files' vector phases (`vec_phase`: 1
 * with a file vector, 2 with its chunks' too): the files marked refined whose chunks lack vectors, then the files
 * marked with a file vector they lack. `lacking` is each chunk of a file marked refined that has no vector (its path
 * and ordinal), `coarse` the count of files marked with a file vector they lack; each driver asks its own tables.
 */
export function vectorMarkProblems(
  lacking: ReadonlyArray<{ path: string; ordinal: number }>,
  coarse: number,
): string[] {
  const problems: string[] = [];
  // a data file's tail has no vectors by design (chunkGetsVector): only a chunk that should have one counts
  const unrefined = new Set(lacking.filter((r) => chunkGetsVector(r.path, r.ordinal)).map((r) => r.path))
    .size;
  if (unrefined) problems.push(`${unrefined} files are marked embedded but lack chunk vectors`);
  if (coarse) problems.push(`${coarse} files are marked with a file vector they lack`);
  return problems;
}

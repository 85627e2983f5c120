// The words faces share with the core: search modes and the JSON of a result, grep's limits and rows, the reasons a
// file is skipped, the data role of chunk vectors. Named here so that no face reaches into search/ or workspace/.

export { GREP_LIMITS, type GrepMatch, type GrepResponse, grepRows } from '../search/grep-rows.ts';
export { resultJson, resultLabel, SEARCH_MODES, type SearchMode, searchMode } from '../search/modes.ts';
export { analyzeQuery } from '../search/query.ts';
export { DATA_CHUNK_VECTORS } from '../workspace/roles.ts';
export { SKIP_REASONS } from '../workspace/skips.ts';

/**
 * A project indexed here (`openProject`): opening it (open.ts), indexing it (indexing.ts), searching it (search.ts),
 * its freshness and catch-up with the working tree (freshness.ts, held in the project's state: state.ts), grep
 * (grep.ts), its status (status.ts), the symbol commands (symbols.ts) and the lines of its files (lines.ts).
 */
export type { IndexStatus, LocalProject, Project } from '../types.ts';
export { type IndexProjectOptions, indexProject } from './indexing.ts';
export { indexedPath } from './lines.ts';
export { type OpenProjectOptions, openProject } from './open.ts';
export { embedQuery, nearestIn, type SearchProjectOptions, searchProject } from './search.ts';
export { keptFreshBy } from './state.ts';
export { indexStatus, projectStatus, type StatusReport } from './status.ts';

import type { LocalProject } from '../src/project/local/index.ts';
import type { FileRecord } from '../src/store/types.ts';

/**
 * The search benchmarks' queries: natural-language phrases, and "where is X defined" for identifiers sampled
 * (deterministically) from the index itself, alternating.
 */
export async function benchQueries(project: LocalProject, files: FileRecord[], n: number): Promise<string[]> {
  const sampled = files
    .filter((_, i) => i % Math.max(1, Math.floor(files.length / 200)) === 0)
    .slice(0, 200)
    .map((f) => f.path);
  const symbols = [
    ...new Set([...(await project.store.listSymbols(sampled)).values()].flat().map((s) => s.name)),
  ];
  const phrases = [
    'how is the configuration loaded',
    'parse command line arguments',
    'retry the request after a failure',
    'where are errors logged',
    'close the connection when done',
    'read the file from disk',
    'validate user input',
    'cache the result',
    'convert the value to a string',
    'handle a timeout',
  ];
  return Array.from({ length: n }, (_, i) =>
    i % 2 === 0
      ? phrases[(i / 2) % phrases.length]!
      : `where is ${symbols[(i * 7) % symbols.length] ?? 'main'} defined`,
  );
}

import { QuarryError } from '../../errors.ts';
import type { RefHit, SymbolHit } from '../../store/types.ts';
import type { LocalProject, Outline, RepoMap } from '../types.ts';
import { indexedPath } from './lines.ts';
import { stateOf } from './state.ts';

// every symbol answer catches up with the working tree first, as a search does: an edit, a rename or a deletion is
// never answered from the old index

/** Where a name is defined (answer/router.ts), after a catch-up with the working tree. */
export async function definitionsIn(
  project: LocalProject,
  name: string,
  options?: { limit?: number },
): Promise<SymbolHit[]> {
  await stateOf(project).freshness.catchUp();
  return (await import('../../answer/router.ts')).findDefinitions(project, name, options);
}

/** The files that use a name and their lines (answer/router.ts), after a catch-up with the working tree. */
export async function referencesIn(
  project: LocalProject,
  name: string,
  options?: { limit?: number },
): Promise<RefHit[]> {
  await stateOf(project).freshness.catchUp();
  return (await import('../../answer/router.ts')).findReferences(project, name, options);
}

/** A file's outline, after a catch-up with the working tree. */
export async function outlineIn(project: LocalProject, path: string): Promise<Outline> {
  await stateOf(project).freshness.catchUp();
  return outlineOf(project, path);
}

/** The repository map (context/repomap.ts), after a catch-up with the working tree. */
export async function repoMapIn(
  project: LocalProject,
  { question, ...o }: { budget: number; focus?: string[]; question?: string },
): Promise<RepoMap> {
  await stateOf(project).freshness.catchUp();
  const m = await import('../../context/repomap.ts');
  return m.buildRepoMap(project.store, {
    ...o,
    ...(question ? { mentions: m.questionMentions(question) } : {}),
  });
}

/** A file's definitions and top-level variables, each listed once (`outline`). */
async function outlineOf(project: LocalProject, path: string): Promise<Outline> {
  const { store } = project;
  const rel = indexedPath(path);
  if (!(await store.getFile(rel)))
    throw new QuarryError(
      'BAD_INPUT',
      `${rel} is not in the index: give the path from the project root (\`quarry files\` lists them)`,
    );
  const { fileVariables } = await import('../../answer/router.ts');
  const symbols = (await store.listSymbols([rel])).get(rel) ?? [];
  // a top-level variable the symbols already hold (`TIMEOUT = 30`, a Go `var`) is listed once, as a symbol
  const listed = new Set(symbols.map((s) => `${s.name}:${s.startLine}`));
  const variables = (await fileVariables(project, rel)).filter((v) => !listed.has(`${v.name}:${v.line}`));
  return { path: rel, symbols, variables };
}

import { existsSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { QuarryError } from '../errors.ts';
import { mainWorktreeOf, projectRootFor } from '../host/checkout.ts';
import type { LocalProject, OpenProjectOptions, Project } from '../project/local/index.ts';
import type { RepoInfo } from '../store/types.ts';
import type { Globals } from './context.ts';
import { visible } from './format.ts';

/**
 * A project opened here: the local project's code (store, indexer, search, grammars) loads with the first one, so a
 * command that asks a running server never loads it (docs/benchmarks.md, "A search that loads only search").
 */
async function openProject(options: OpenProjectOptions): Promise<LocalProject> {
  return (await import('../project/local/index.ts')).openProject(options);
}

/** The folder a project is a checkout of, when it is one here (not a remote, nor a repository read from a store). */
export function checkoutRoot(project: Project): string | undefined {
  const local = (project as Partial<LocalProject>).root;
  return local && !project.remote && project.location === local ? local : undefined;
}

/**
 * A path as the user typed it, as the index names it (root-relative, POSIX): absolute, relative to where the command
 * runs, or already root-relative all work. A path outside the project is a one-line error.
 */
export function projectPath(project: Project, typed: string, cwd = process.cwd()): string {
  // a remote or store-only project has no folder here: a checkout of it around cwd tells where its root is
  const root = checkoutRoot(project) ?? projectRootFor(undefined, cwd);
  const clean = typed.replace(/\\/g, '/');
  if (root) {
    const abs = resolve(cwd, clean);
    const rel = relative(root, abs).split(sep).join('/');
    const inside = rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
    if (isAbsolute(clean)) {
      if (!inside)
        throw new QuarryError(
          'BAD_INPUT',
          `${typed} is outside the project (${root}): give a path inside it`,
        );
      return rel || '.';
    }
    // from here when that names something here; else as given, from the root
    if (inside && existsSync(abs)) return rel || '.';
  }
  return clean.replace(/^\.\//, '').replace(/\/+$/, '') || '.';
}

/**
 * How to print a repository-relative path to someone standing in `cwd`: relative to where they stand when the
 * project is a folder here (an editor opened there can follow it), as indexed otherwise (a remote, a store).
 */
export function shownPath(project: Project, rel: string, cwd = process.cwd()): string {
  const root = checkoutRoot(project) ?? projectRootFor(undefined, cwd);
  if (!root || root === cwd) return rel;
  const out = relative(cwd, join(root, rel)).split(sep).join('/');
  return out || rel;
}

/** The remote quarry the command talks to (`--remote`, else `QUARRY_REMOTE`), if any. */
export function remoteOf(g: { remote?: string }): string | undefined {
  return g.remote ?? (process.env.QUARRY_REMOTE || undefined);
}

/**
 * The project a command reads: a remote quarry's repository (`--remote`), a repository of a shared store named with
 * `--repo` (read from the store), or the checkout here.
 */
export async function openAnyProject(g: Globals): Promise<Project> {
  const repos = g.repo ?? [];
  if (repos.length > 1)
    throw new QuarryError(
      'BAD_INPUT',
      'this command reads one repository: pass --repo once (search takes several)',
    );
  const remote = remoteOf(g);
  if (remote) {
    const { openRemoteProject } = await import('../project/remote.ts');
    return withOverlay(g, await openRemoteProject({ url: remote, ...(repos[0] ? { repo: repos[0] } : {}) }));
  }
  if (repos[0]) {
    // a named repository: through this checkout's settings when there is one (a store that keeps file text serves
    // it from there), else from the store alone
    const here = projectRootFor(g.root);
    if (!here) return openProject({ repo: repos[0] });
    const project = await openProject({ root: here, overrides: { store: { repo: repos[0] } } });
    const { storeTraitsAt } = await import('../host/admin.ts');
    if (!storeTraitsAt(project.config, here).keyed && project.name !== repos[0]) {
      await project.close();
      throw new QuarryError(
        'BAD_INPUT',
        `a SQLite index holds one repository: pass --store postgres://… to open "${repos[0]}"`,
      );
    }
    return withOverlay(g, project);
  }
  return (await openWorktreeHere(g)) ?? openProject({ ...(g.root ? { root: g.root } : {}) });
}

/**
 * A linked git worktree of a repository whose main tree quarry has indexed, with no index of its own: an overlay on
 * that index (project/worktree.ts), unless `--no-overlay` or QUARRY_OVERLAY=off. Undefined for any other checkout.
 */
async function openWorktreeHere(g: Globals): Promise<Project | undefined> {
  const here = overlayRoot(g);
  if (!here) return undefined;
  const main = mainWorktreeOf(here);
  if (!main) return undefined;
  const note = (m: string) => process.stderr.write(`quarry: ${visible(m)}\n`);
  const { openWorktree } = await import('../project/worktree.ts');
  return openWorktree(here, {
    main,
    onNotice: (m) => {
      if (g.verbose || !m.startsWith('overlay: ')) note(m);
    },
  });
}

/**
 * A shared index (`--remote`, `--repo`) opened in a git checkout with changes since the commit it was built at:
 * this checkout's changes over it (a local overlay, docs/team.md). The shared index as it is with `--no-overlay`,
 * `QUARRY_OVERLAY=off`, outside a checkout, or when the overlay cannot be made (a note says why).
 */
export async function withOverlay(g: Globals, base: Project): Promise<Project> {
  const here = overlayRoot(g);
  if (!here) return base;
  const note = (m: string) => process.stderr.write(`quarry: ${visible(m)}\n`);
  const { openOverlay } = await import('../project/overlay.ts');
  try {
    return (
      (await openOverlay(base, {
        root: here,
        onNotice: g.verbose
          ? note
          : (m) => {
              if (!m.startsWith('overlay: ')) note(m);
            },
      })) ?? base
    );
  } catch (err) {
    note(
      `no overlay of this checkout's changes (${(err as Error).message}); searching the shared index as it is`,
    );
    return base;
  }
}

/** The checkout a shared index is overlaid with: a git working tree here, unless `--no-overlay` or QUARRY_OVERLAY=off. */
export function overlayRoot(g: Globals): string | undefined {
  if (g.overlay === false || /^(off|0|false|no)$/i.test(process.env.QUARRY_OVERLAY ?? '')) return undefined;
  const here = projectRootFor(g.root);
  return here && existsSync(join(here, '.git')) ? here : undefined;
}

/** The repositories next to this one: the remote's, this checkout's store's, or the configured store's. */
export async function repoList(g: Globals): Promise<RepoInfo[]> {
  const remote = remoteOf(g);
  if (remote) {
    const { remoteRepos } = await import('../project/remote.ts');
    return remoteRepos(remote);
  }
  const here = projectRootFor(g.root);
  // a shared store lists its repositories from anywhere: a checkout with no index of its own in that store included
  // (it once failed there, exit 3, trying to open the checkout's own key)
  const { openRepoRegistry } = await import('../host/admin.ts');
  const registry = await openRepoRegistry(here ?? process.cwd());
  if (!registry && here) {
    const project = await openProject({ root: here });
    try {
      return await project.repos();
    } finally {
      await project.close();
    }
  }
  if (!registry)
    throw new QuarryError(
      'NO_ROOT',
      `no quarry project in ${process.cwd()}: run this in one, or pass --store postgres://… or --remote URL`,
    );
  try {
    return await registry.list();
  } finally {
    await registry.close();
  }
}

export async function withProject<T>(g: Globals, fn: (p: Project) => Promise<T>): Promise<T> {
  const project = await openAnyProject(g);
  try {
    return await fn(project);
  } finally {
    await project.close();
  }
}

/** For commands that change files here (edit, undo, history): the checkout, never a remote. */
export async function withLocalProject<T>(g: Globals, fn: (p: LocalProject) => Promise<T>): Promise<T> {
  if (remoteOf(g))
    throw new QuarryError('BAD_INPUT', 'edits change files here: run this in the checkout, without --remote');
  const project = await openProject({ ...(g.root ? { root: g.root } : {}) });
  try {
    return await fn(project);
  } finally {
    await project.close();
  }
}

/** The project as a running local server of this checkout serves it, when there is one that answers. */
export async function warmServerProject(rootOption: string | undefined): Promise<Project | undefined> {
  const { findServer } = await import('../host/discovery.ts');
  const root = projectRootFor(rootOption);
  const note = root ? findServer(root) : undefined;
  if (!note) return undefined;
  try {
    const { openRemoteProject } = await import('../project/remote.ts');
    // opening asks the server for its status once (it answers, and is quarry), unless its note names the repository:
    // then the first call checks, and the caller opens the index here if that call cannot reach it
    return await openRemoteProject({
      url: note.url,
      ...(note.repo ? { repo: note.repo, known: true } : {}),
    });
  } catch {
    return undefined;
  }
}

/** The root a command that needs no index works on: --root, else the project above cwd, else refused. */
export function projectRootOf(g: Globals): string {
  const root = projectRootFor(g.root);
  if (!root)
    throw new QuarryError(
      'NO_ROOT',
      `no quarry project or git repository above ${process.cwd()}: run this in one, or pass --root DIR`,
    );
  return root;
}

import { realpathSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { QuarryError } from '../errors.ts';
import { AD_HOC_TOKEN, FULL_GRANT, type Grant } from './tokens.ts';

/**
 * Which folders a call may open by naming them (MCP's `root` argument): the one rule for every face. A caller that owns
 * the process (`quarry mcp` over stdio, started by the user for the user) may open any indexed project on the machine;
 * a caller over the network (`quarry mcp --http`) only the folder the server was started for and folders inside it,
 * unless its token is one made to see every repository and re-index (`quarry token add NAME --all --reindex`);
 * a shared server (`quarry serve`) names repositories, never folders.
 */
export interface RootPolicy {
  /** The folder the server was started for (its project root), if any. */
  home: string | null;
  /** The caller runs the process (stdio): every folder is theirs already. */
  owner: boolean;
  /** The caller's grant (its token's; the loopback grant when tokens are off). */
  grant?: Grant;
}

function real(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/** Is `path` the folder `home` or inside it (links resolved, so a link out of it does not count)? */
function inside(home: string, path: string): boolean {
  const rel = relative(real(home), real(path));
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** The folder a call may open, resolved; BAD_INPUT (or AUTH) with the reason when it may not. */
export function allowedRoot(policy: RootPolicy | undefined, root: string): string {
  if (!policy)
    throw new QuarryError('BAD_INPUT', 'this server does not open other folders: use repo (see list_repos)');
  if (!isAbsolute(root)) throw new QuarryError('BAD_INPUT', `root must be an absolute path, not ${root}`);
  const key = resolve(root);
  if (policy.owner) return key;
  if (policy.home && inside(policy.home, key)) return key;
  const grant = policy.grant;
  // a token someone made for this (`quarry token add NAME --all --reindex`), not the one a run made up or was given
  if (
    grant &&
    grant.name !== FULL_GRANT.name &&
    grant.name !== AD_HOC_TOKEN &&
    grant.repos === '*' &&
    grant.reindex
  )
    return key;
  throw new QuarryError(
    'AUTH',
    `root ${key} is outside ${policy.home ?? 'the folder this server was started for'}: this server opens only that folder (a token made by \`quarry token add NAME --all --reindex\` may open others)`,
  );
}

import { QuarryError } from '../errors.ts';
import { findProjectRoot } from '../workspace/root.ts';

/** A port is a whole number 0–65535 (0: any free one); anything else is a one-line error before anything starts. */
export function checkPort(port: number | undefined): void {
  if (port === undefined) return;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new QuarryError(
      'BAD_INPUT',
      `--port ${port} is not a port: give a whole number from 1 to 65535 (0 picks a free one)`,
    );
}

/** What a failed listen means to the user, in one line. */
export function listenError(err: NodeJS.ErrnoException, host: string, port: number | undefined): Error {
  if (err.code === 'EADDRINUSE')
    return new QuarryError(
      'IO',
      `port ${port} on ${host} is in use (another quarry?): pick another with --port, or --port 0 for a free one`,
    );
  if (err.code === 'EACCES')
    return new QuarryError('IO', `port ${port} on ${host} needs privileges: use a port above 1023`);
  if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND')
    return new QuarryError('BAD_INPUT', `${host} is not an address of this machine: check --host`);
  return new QuarryError('IO', `cannot listen on ${host}:${port}: ${err.message}`, { cause: err });
}

/**
 * Long-running commands never start an index in a folder that is no project (an agent that runs `quarry mcp` in
 * the home folder must not index the home folder): they take `--root` or `--init`.
 */
/** Refuses (NO_ROOT) unless a root is given, `--init` is, or `cwd` is inside a project. */
export function requireProject(cwd: string, command: string, given: { root?: string; init?: boolean }): void {
  if (!given.root && !given.init && !findProjectRoot(cwd)) throw noProjectHere(cwd, command);
}

export function noProjectHere(cwd: string, command: string): QuarryError {
  return new QuarryError(
    'NO_ROOT',
    `no quarry project at or above ${cwd}: run \`quarry index\` there first, or \`quarry ${command} --init\` to start one here (or --root DIR)`,
  );
}

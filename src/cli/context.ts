import type pc from 'picocolors';

export type Colors = ReturnType<typeof pc.createColors>;

export interface Io {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

/** Global options (--root, --store, --remote, --repo, --verbose, --color). */
export interface Globals {
  root?: string;
  store?: string;
  remote?: string;
  repo?: string[];
  verbose?: boolean;
  color?: boolean | string;
  /** `--no-overlay`: with --remote or --repo, search the shared index as it is, not this checkout's changes over it. */
  overlay?: boolean;
}

/** What every command's face gets: where to write, colours for a stream, the global options, the exit code. */
export interface CliContext {
  io: Io;
  colors(stream: NodeJS.WriteStream): Colors;
  globals(): Globals;
  /** The process exit code once the command returns (a search with no match: 1, an interrupted index: 130). */
  setExitCode(code: number): void;
}

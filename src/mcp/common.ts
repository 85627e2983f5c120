/** What every MCP tool shares: the shape of a tool, how its answer becomes a result, and the common arguments. */
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { knownError, publicMessage } from '../errors.ts';
import { allowedRoot, type RootPolicy } from '../host/roots.ts';
import { type ProjectSet, redacting } from '../host/set.ts';
import { openProject } from '../project/local/index.ts';
import type { Project } from '../project/types.ts';

/** Characters of one tool result before it is cut (with a note saying how to get the rest). */
const MAX_OUTPUT = 40_000;

export type ToolResult = {
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

/**
 * What a tool answers: compact text for the model (numbered lines, one line per hit: 35–45% fewer tokens than
 * pretty JSON, see docs/mcp.md), and the same facts as structured content for clients that read it.
 */
export interface Answer {
  text: string;
  data?: Record<string, unknown>;
}

/** What a tool's handler may call: the set of repositories, and a project by `repo` or by `root`. */
export interface ToolContext {
  set: ProjectSet;
  projectOf(repo: string | undefined, root: string | undefined): Promise<Project>;
}

/** One MCP tool: its definition as data, and the one function that answers a call. */
export interface McpTool<S extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  inputSchema: S;
  annotations: ToolAnnotations;
  handler(args: z.infer<z.ZodObject<S>>, ctx: ToolContext): Promise<Answer | string>;
}

/** A tool with its argument types checked against its schema, then erased so tools of any shape fit one list. */
export function defineTool<S extends z.ZodRawShape>(tool: McpTool<S>): McpTool {
  return tool as unknown as McpTool;
}

export function toResult(answer: Answer | string, structured = false): ToolResult {
  const a = typeof answer === 'string' ? { text: answer } : answer;
  let out = a.text;
  if (out.length > MAX_OUTPUT)
    out = `${out.slice(0, MAX_OUTPUT)}\n… [cut at ${MAX_OUTPUT} characters of ${out.length}: ask for fewer results (top_k, limit) or page with offset]`;
  return {
    content: [{ type: 'text', text: out }],
    ...(structured && a.data ? { structuredContent: a.data } : {}),
  };
}

export function failure(raw: unknown): ToolResult {
  // where a store lives is the server's business: an agent gets what happened, not the URL
  return { content: [{ type: 'text', text: publicMessage(knownError(raw)) }], isError: true };
}

/** A tool call's answer as an MCP result: errors become an error result, never a thrown protocol error. */
export async function run(fn: () => Promise<Answer | string>, structured = false): Promise<ToolResult> {
  try {
    return toResult(await fn(), structured);
  } catch (err) {
    return failure(err);
  }
}

/** Lines numbered as an editor shows them. */
export function numbered(first: number, lines: readonly string[]): string {
  const width = String(first + lines.length - 1).length;
  return lines.map((l, i) => `${String(first + i).padStart(width)}  ${l}`).join('\n');
}

/** An object as `key: value` lines (nested objects flattened with dots): status reports for an agent. */
export function flatText(value: Record<string, unknown>, prefix = ''): string {
  const lines: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    if (v && typeof v === 'object' && !Array.isArray(v))
      lines.push(flatText(v as Record<string, unknown>, `${prefix}${k}.`));
    else if (Array.isArray(v))
      lines.push(
        `${prefix}${k}: ${v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ')}`,
      );
    else lines.push(`${prefix}${k}: ${v === null ? '-' : String(v)}`);
  }
  return lines.filter(Boolean).join('\n');
}

export const READ_ONLY = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};

export const repoArg = z.string().optional().describe("A repository (list_repos); default: the server's own");

/** `root` in a tool's schema; its description depends on the server, so `withRootArg` gives it one per server. */
export const rootArg = z.string().optional();

/** The schema as a server shows it: `root` described as available or not. */
export function withRootArg(shape: z.ZodRawShape, roots: RootPolicy | undefined): z.ZodRawShape {
  if (!('root' in shape)) return shape;
  const said = !roots
    ? 'Not available here'
    : roots.owner
      ? 'Another indexed project, by absolute path'
      : `An indexed project inside ${roots.home ?? 'the served folder'}, by absolute path`;
  return { ...shape, root: rootArg.describe(said) };
}

/** `projectOf` for one server: a repository of the set, or another indexed project by its root where the policy lets
 * this caller open it (host/roots.ts: the one rule for every face). */
export function projectsByRoot(
  set: ProjectSet,
  roots: RootPolicy | undefined,
): { projectOf: ToolContext['projectOf']; close(): void } {
  // projects named by `root`, opened once (read-only use: an index must already be there)
  const byRoot = new Map<string, Promise<Project>>();
  const projectOf = async (repo: string | undefined, root: string | undefined): Promise<Project> => {
    if (root === undefined) return set.get(repo);
    const key = allowedRoot(roots, root);
    if (set.live && key === set.live.project.root) return redacting(set.live.project);
    let opened = byRoot.get(key);
    if (!opened) {
      opened = openProject({ root: key }).then(redacting);
      byRoot.set(key, opened);
      opened.catch(() => byRoot.delete(key));
    }
    return opened;
  };
  const close = () => {
    for (const p of byRoot.values()) void p.then((x) => x.close()).catch(() => undefined);
    byRoot.clear();
  };
  return { projectOf, close };
}

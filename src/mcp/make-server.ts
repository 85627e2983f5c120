import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { RootPolicy } from '../host/roots.ts';
import type { ProjectSet } from '../host/set.ts';
import { STRUCTURED_META } from '../project/types.ts';
import { projectsByRoot, run, type ToolContext, withRootArg } from './common.ts';
import { TOOLS } from './tools/index.ts';

const VERSION = '0.1.0';

/** How quarry's MCP server describes itself to an agent (the initialize result's `instructions`). */
export const MCP_INSTRUCTIONS = `quarry indexes this repository (tree-sitter chunks, BM25, embeddings, a symbol and reference graph) and answers from the index.
Use search_code for questions in plain words or when you do not know the names ("where are retries handled?"); it ranks code by meaning and keywords and returns path:line ranges.
Use find_symbol for a known identifier's definition and its uses, list_symbols for a file's outline, read_file to read numbered lines, repo_map for an overview of the most referenced files and definitions, get_context to get the code that answers a question within a token budget.
Use quarry's grep tool for an exact string or a regular expression over the indexed files (path:line:column:text); a shell grep only for files quarry does not index (ignored, generated, secret-looking).
Paths are from the repository root. Results reflect the last sync; index_status says how fresh the index is.`;

export interface McpServerOptions {
  /**
   * Which folders a call may open by naming them (`root`; host/roots.ts). None: a shared server (`quarry serve`'s
   * /mcp) never opens folders a caller names.
   */
  roots?: RootPolicy;
}

/** The MCP tools over a set of repositories (one, or what a token may see): each tool calls the Project seam. */
export function createMcpServer(set: ProjectSet, options: McpServerOptions = {}): McpServer {
  const server = new McpServer({ name: 'quarry', version: VERSION }, { instructions: MCP_INSTRUCTIONS });
  const roots = projectsByRoot(set, options.roots);
  server.server.onclose = () => roots.close();
  const ctx: ToolContext = { set, projectOf: roots.projectOf };
  for (const { name, title, description, inputSchema, annotations, handler } of TOOLS) {
    const shape = withRootArg(inputSchema, options.roots);
    server.registerTool(
      name,
      { title, description, inputSchema: strictArguments(name, shape), annotations },
      (args, extra) => run(() => handler(args as never, ctx), extra._meta?.[STRUCTURED_META] === true),
    );
  }
  return server;
}

/**
 * A tool's arguments as an object that refuses keys it does not know, naming them and the ones it takes: an agent
 * that guesses `fixed_strings` for `fixed` learns it at once, instead of its argument being dropped without a word.
 */
function strictArguments(tool: string, shape: z.ZodRawShape) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `${tool} takes no argument ${issue.keys.map((k) => `"${k}"`).join(', ')}: its arguments are ${known.join(', ')}`
        : undefined,
  });
}

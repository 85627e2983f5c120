import { z } from 'zod';
import { searchFilter } from '../../host/set.ts';
import { type GrepResponse, grepRows } from '../../host/vocabulary.ts';
import { type Answer, defineTool, READ_ONLY, repoArg, rootArg, type ToolContext } from '../common.ts';

/** Longest line an answer shows (minified code has lines of 100 kB). */
const MAX_COLUMNS = 300;

const inputSchema = {
  pattern: z.string().min(1).max(1000),
  fixed: z.boolean().default(false).describe('The pattern is text'),
  ignore_case: z.boolean().default(false),
  word: z.boolean().default(false),
  glob: z.array(z.string()).optional().describe('Globs; "!glob" excludes'),
  type: z.array(z.string()).optional().describe('Languages: python, ts, …'),
  path: z.array(z.string()).optional(),
  context: z.number().int().min(0).max(5).default(0),
  hidden: z
    .boolean()
    .default(false)
    .describe('Search hidden files and folders too (names starting with a dot), as ripgrep --hidden'),
  limit: z.number().int().min(1).max(500).default(50),
  repo: repoArg,
  root: rootArg,
};

/** grep: ripgrep over the index; one line per match, `path:line:column:text`, context as `path-line-text`. */
export async function grepTool(
  args: z.infer<z.ZodObject<typeof inputSchema>>,
  { projectOf }: ToolContext,
): Promise<Answer> {
  const project = await projectOf(args.repo, args.root);
  const filter = searchFilter({ pathPrefixes: args.path });
  const res = await project.grep({
    pattern: args.pattern,
    fixed: args.fixed,
    ignoreCase: args.ignore_case,
    word: args.word,
    ...(args.glob ? { globs: args.glob } : {}),
    ...(args.type ? { types: args.type } : {}),
    ...(filter ? { filter } : {}),
    context: args.context,
    ...(args.hidden ? { hidden: true } : {}),
    limit: args.limit,
    maxColumns: MAX_COLUMNS,
  });
  return { text: grepText(res, args.limit) };
}

/** The answer's text: what ripgrep --vimgrep prints (context lines with `-`), then one line of totals. */
export function grepText(res: GrepResponse, limit: number): string {
  const { binary = 0, secret = 0 } = res.notSearched ?? {};
  const left = [
    binary ? `${binary} binary file${binary === 1 ? '' : 's'} not searched` : '',
    secret ? `${secret} file${secret === 1 ? '' : 's'} holding a private key not searched` : '',
  ]
    .filter(Boolean)
    .join(', ');
  if (!res.matches.length)
    return `no line matches ${JSON.stringify(res.pattern)} (${res.scanned} files read${left ? `; ${left}` : ''})`;
  const lines: string[] = [];
  for (const row of grepRows(res.matches)) {
    if (row.kind === 'context') lines.push(`${row.path}-${row.line.line}-${row.line.text}`);
    else if (row.kind === 'match')
      lines.push(`${row.match.path}:${row.match.line}:${row.match.column}:${row.match.text}`);
  }
  lines.push(
    `${res.matches.length} matching line${res.matches.length === 1 ? '' : 's'} in ${res.files} file${res.files === 1 ? '' : 's'}${res.truncated ? `; more exist: narrow the pattern or raise limit (now ${limit})` : ''}${left ? `; ${left}` : ''}`,
  );
  return lines.join('\n');
}

export const grepMcpTool = defineTool({
  name: 'grep',
  title: 'Grep the code',
  description:
    "Exact or regex search (RE2, ripgrep's options) over the indexed files: path:line:column:text per matching line.",
  inputSchema,
  annotations: READ_ONLY,
  handler: grepTool,
});

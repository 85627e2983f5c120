import type { Context } from 'hono';
import { z } from 'zod';
import { QuarryError } from '../../errors.ts';
import { searchFilter } from '../../host/set.ts';
import { GREP_LIMITS } from '../../host/vocabulary.ts';
import { body, type Env, projectFor } from '../request.ts';

const list = z.array(z.string()).max(50);

/** What POST /api/grep takes: the CLI's and the MCP tool's options, bounded as the MCP tool bounds them. */
const GrepBody = z
  .object({
    pattern: z.string().max(GREP_LIMITS.pattern),
    fixed: z.boolean().optional(),
    ignoreCase: z.boolean().optional(),
    word: z.boolean().optional(),
    globs: list.optional(),
    types: list.optional(),
    path: list.optional(),
    lang: list.optional(),
    context: z.number().int().min(0).max(GREP_LIMITS.context).optional(),
    before: z.number().int().min(0).max(GREP_LIMITS.context).optional(),
    after: z.number().int().min(0).max(GREP_LIMITS.context).optional(),
    count: z.boolean().optional(),
    listFiles: z.boolean().optional(),
    filesWithMatches: z.boolean().optional(),
    hidden: z.boolean().optional(),
    noIgnore: z.boolean().optional(),
    maxPerFile: z.number().int().min(1).optional(),
    limit: z.number().int().min(1).max(2000).default(200),
    maxColumns: z.number().int().min(20).max(10_000).default(500),
    repo: z.string().optional(),
    // a remote quarry sends its whole query: the filter as the core has it
    filter: z.object({ pathPrefixes: list.optional(), languages: list.optional() }).partial().optional(),
  })
  .strict();

/** POST /api/grep {pattern, …}: lines that match, from the index (ripgrep's options; see `quarry grep`). */
export async function grep(c: Context<Env>): Promise<Response> {
  const parsed = GrepBody.safeParse(await body(c));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new QuarryError(
      'BAD_INPUT',
      `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'} (send {"pattern": "…"}; see quarry serve in the README)`,
    );
  }
  const { repo, path, lang, filter: given, ...q } = parsed.data;
  const filter = searchFilter({
    pathPrefixes: [...(path ?? []), ...(given?.pathPrefixes ?? [])],
    languages: [...(lang ?? []), ...(given?.languages ?? [])],
  });
  const project = await projectFor(c, repo);
  return c.json(await project.grep({ ...q, ...(filter ? { filter } : {}) }));
}

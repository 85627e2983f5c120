import type { Context } from 'hono';
import { readProjectSettings, resolveConfig, writeProjectSettings } from '../../config/config.ts';
import { QuarryError } from '../../errors.ts';
import type { LocalProject } from '../../project/local/index.ts';
import { body, type Env } from '../request.ts';

/** Settings are the checkout's own file: only for a grant that sees everything and may re-index. */
function settingsProject(c: Context<Env>): LocalProject {
  const g = c.get('grant');
  const { live } = c.get('hooks');
  if (!live)
    throw new QuarryError('NOT_FOUND', 'this server has no checkout of its own: no settings to show');
  if (g.repos !== '*' || !g.reindex)
    throw new QuarryError('AUTH', "this token may not read or change the server's settings");
  return live.project;
}

/** GET /api/settings: the checkout's settings file, and the settings in effect. */
export function getSettings(c: Context<Env>): Response {
  const project = settingsProject(c);
  return c.json({
    file: readProjectSettings(project.root),
    effective: {
      search: { top_k: project.config.search.topK },
      context: { packing: project.config.context.packing, budget: project.config.context.budget },
      llm: { model: project.config.llm.model ?? '' },
      embed: { provider: project.config.embed.provider },
    },
  });
}

/** PUT /api/settings: write the checkout's settings file. */
export async function putSettings(c: Context<Env>): Promise<Response> {
  const project = settingsProject(c);
  const b = await body(c);
  const file = writeProjectSettings(project.root, b);
  // the running server follows the file from now on
  Object.assign(project.config, resolveConfig({ root: project.root }));
  return c.json({ file });
}

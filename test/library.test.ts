import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
// the package's own entries, as a library user imports them (the built dist/, made by scripts/setup.sh)
import { indexProject, type LocalProject, openProject, searchProject } from 'quarry';
import { ask, assembleContext, openLlm } from 'quarry/answers';
import { startAutoSync } from 'quarry/interfaces';
import { copyPolyglot, removeTree } from './helpers.ts';
import { type LlmServer, startLlmServer } from './llm-server.ts';

describe('the library entries: quarry, quarry/answers, quarry/interfaces (the README example)', () => {
  const trees: string[] = [];
  let project: LocalProject;
  let llm: LlmServer;
  before(async () => {
    llm = await startLlmServer();
    project = await openProject({
      root: copyPolyglot(trees),
      create: true,
      userConfig: false,
      overrides: { embed: { provider: 'none' } },
    });
  });
  after(async () => {
    await project.close();
    await llm.close();
    trees.forEach(removeTree);
  });

  it('indexes, searches, assembles a prompt, asks a model and follows saves', async () => {
    const report = await indexProject(project);
    assert.equal(report.files, 17);
    const { files } = await searchProject(project, 'registry register', { topK: 5 });
    assert.equal(files[0]?.path, 'lib.rs');
    const ctx = await assembleContext(project, 'how does the registry register names?', { budget: 4000 });
    assert.match(ctx.user, /^\[1\] lib\.rs:\d+-\d+$/m);
    llm.reply = () => 'Through Registry::register [1].';
    const model = await openLlm(
      { ...project.config.llm, baseUrl: `${llm.url}/api`, retries: 0 },
      'ollama:qwen2.5-coder:7b',
    );
    const res = await ask(project, 'how does the registry register names?', { llm: model, budget: 4000 });
    let answer = '';
    for await (const piece of res.stream ?? []) answer += piece;
    assert.equal(answer, 'Through Registry::register [1].');
    const sync = await startAutoSync(project, { sweepMs: 0 });
    assert.equal(sync.status().watching, true);
    await sync.stop();
  });
});

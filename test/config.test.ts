import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DEFAULT_CONFIG, projectTrust, resolveConfig, writeProjectSettings } from '../src/config/config.ts';
import { settingsJsonSchema } from '../src/config/schema.ts';
import { makeTree, REPO, removeTree, trustProjectFile } from './helpers.ts';

const trees: string[] = [];
after(() => trees.forEach(removeTree));
/** A project whose quarry.toml the user trusts (config/trust.ts): every setting in it applies. */
function project(toml: string): string {
  const root = makeTree({ 'quarry.toml': toml });
  trees.push(root);
  trustProjectFile(root);
  return root;
}

describe('config', () => {
  it("an untrusted quarry.toml's settings that reach out are left out and named once; the rest apply", () => {
    const root = makeTree({
      'quarry.toml':
        '[search]\ntop_k = 4\n[embed]\nprovider = "openai"\nbase_url = "http://203.0.113.9/v1"\napi_key_env = "GITHUB_TOKEN"\n[store]\nurl = "postgres://u@203.0.113.9/db"\n[context]\nredact_secrets = false\n',
    });
    trees.push(root);
    const notes: string[] = [];
    const c = resolveConfig({ root, userConfig: false, env: {}, onNotice: (m) => notes.push(m) });
    assert.equal(c.search.topK, 4);
    assert.equal(c.embed.provider, DEFAULT_CONFIG.embed.provider);
    assert.equal(c.embed.baseUrl, undefined);
    assert.equal(c.embed.apiKeyEnv, undefined);
    assert.equal(c.store.url, undefined);
    assert.equal(c.store.driver, 'sqlite');
    assert.equal(c.context.redactSecrets, true);
    resolveConfig({ root, userConfig: false, env: {}, onNotice: (m) => notes.push(m) });
    assert.equal(notes.length, 1, 'said once a process');
    assert.match(
      notes[0]!,
      /embed\.provider, embed\.base_url, embed\.api_key_env, store\.url, context\.redact_secrets.*quarry trust/,
    );
    // a local provider needs no trust; a wrong value is said either way
    writeFileSync(join(root, 'quarry.toml'), '[embed]\nprovider = "static"\n');
    assert.equal(resolveConfig({ root, userConfig: false, env: {} }).embed.provider, 'static');
    writeFileSync(join(root, 'quarry.toml'), '[store]\ndriver = "mysql"\n');
    assert.throws(() => resolveConfig({ root, userConfig: false, env: {} }), /store\.driver/);
    // trusted, they apply; an edit takes the trust away
    writeFileSync(join(root, 'quarry.toml'), '[embed]\nprovider = "ollama"\n');
    trustProjectFile(root);
    assert.equal(resolveConfig({ root, userConfig: false }).embed.provider, 'ollama');
    writeFileSync(join(root, 'quarry.toml'), '[embed]\nprovider = "ollama" \n');
    assert.equal(resolveConfig({ root, userConfig: false, onNotice: () => {} }).embed.provider, 'local');
    // a change through the panel keeps the trust when it leaves every guarded setting as it was, and only then
    trustProjectFile(root);
    writeProjectSettings(root, { search: { top_k: 7 } });
    assert.equal(projectTrust(root).trusted, true);
    writeProjectSettings(root, { embed: { base_url: 'http://203.0.113.9/v1' } });
    assert.equal(projectTrust(root).trusted, false);
  });

  it('resolves a model folder named in quarry.toml against the project, wherever quarry runs from', () => {
    const root = project('[embed]\nmodel = "bge-small-en"\nmodel_dir = "models/bge"\n');
    assert.equal(resolveConfig({ root, userConfig: false }).embed.modelDir, join(root, 'models', 'bge'));
    const abs = project('[embed]\nmodel_dir = "/opt/models/bge"\n');
    assert.equal(resolveConfig({ root: abs, userConfig: false }).embed.modelDir, '/opt/models/bge');
  });

  it('reads quarry.toml, the environment and overrides, in that order of precedence', () => {
    const root = project(`max_file_bytes = 2048
workers = 2
ignore = ["gen/"]
[chunk]
max_chars = 3000
target_chars = 1500
window_lines = 40
overlap_lines = 4
[embed]
provider = "ollama"
model = "nomic-embed-code"
base_url = "http://127.0.0.1:11434"
query_prefix = "q: "
download = false
threads = 3
[search]
top_k = 7
fusion = "linear"
rrf_k = 30
dense_weight = 0.5
lexical_weight = 2
dense_floor = 0.2
mmr_lambda = 1
[search.rerank]
protocol = "tei"
url = "http://127.0.0.1:8080"
top = 12
`);
    const c = resolveConfig({
      root,
      userConfig: false,
      env: { QUARRY_WORKERS: '1' },
      overrides: { search: { topK: 9 } },
    });
    assert.equal(c.maxFileBytes, 2048);
    assert.equal(c.workers, 1, 'environment over file');
    assert.deepEqual(c.ignore, ['gen/']);
    assert.deepEqual(c.chunk, { maxChars: 3000, targetChars: 1500, windowLines: 40, overlapLines: 4 });
    assert.equal(c.embed.provider, 'ollama');
    assert.equal(c.embed.model, 'nomic-embed-code');
    assert.equal(c.embed.baseUrl, 'http://127.0.0.1:11434');
    assert.equal(c.embed.queryPrefix, 'q: ');
    assert.equal(c.embed.download, false);
    assert.equal(c.embed.threads, 3);
    assert.equal(c.search.topK, 9, 'overrides over everything');
    assert.equal(c.search.fusion, 'linear');
    assert.deepEqual(
      [c.search.rrfK, c.search.denseWeight, c.search.lexicalWeight, c.search.denseFloor, c.search.mmrLambda],
      [30, 0.5, 2, 0.2, 1],
    );
    assert.deepEqual(c.search.rerank, { protocol: 'tei', url: 'http://127.0.0.1:8080', top: 12 });
    assert.deepEqual(c.search.weights, DEFAULT_CONFIG.search.weights);
  });

  it('reads the [context] and [llm] sections, and the system prompt from the environment or a file', () => {
    const root = project(`[context]
packing = "files"
budget = 12000
soft_ratio = 0.6
map_tokens = 512
context_lines = 5
named_file_share = 0.25
system_prompt = "from the file"
[llm]
model = "ollama:qwen2.5-coder:7b"
base_url = "http://127.0.0.1:11434/api"
temperature = 0.1
max_output_tokens = 1000
context_window = 65536
timeout_ms = 5000
retries = 4
`);
    const c = resolveConfig({ root, userConfig: false, env: {} });
    assert.deepEqual(c.context, {
      packing: 'files',
      budget: 12000,
      softRatio: 0.6,
      mapTokens: 512,
      contextLines: 5,
      namedFileShare: 0.25,
      minRelevance: 0.25,
      systemPrompt: 'from the file',
      redactSecrets: true,
    });
    assert.deepEqual(c.llm, {
      model: 'ollama:qwen2.5-coder:7b',
      baseUrl: 'http://127.0.0.1:11434/api',
      temperature: 0.1,
      maxOutputTokens: 1000,
      contextWindow: 65536,
      timeoutMs: 5000,
      retries: 4,
    });
    const promptFile = join(root, 'prompt.txt');
    writeFileSync(promptFile, 'from a prompt file');
    assert.equal(
      resolveConfig({ root, userConfig: false, env: { QUARRY_SYSTEM_PROMPT_FILE: promptFile } }).context
        .systemPrompt,
      'from a prompt file',
    );
    const both = resolveConfig({
      root,
      userConfig: false,
      env: {
        QUARRY_SYSTEM_PROMPT_FILE: promptFile,
        QUARRY_SYSTEM_PROMPT: 'inline',
        QUARRY_MODEL: 'openai:gpt-4o',
      },
    });
    assert.equal(both.context.systemPrompt, 'inline');
    assert.equal(both.llm.model, 'openai:gpt-4o');
    assert.throws(
      () =>
        resolveConfig({
          root,
          userConfig: false,
          env: { QUARRY_SYSTEM_PROMPT_FILE: join(root, 'nope.txt') },
        }),
      /QUARRY_SYSTEM_PROMPT_FILE: cannot read .*nope\.txt \(ENOENT\)/,
    );
    assert.throws(
      () => resolveConfig({ root: project('[context]\npacking = "all"'), userConfig: false }),
      /context\.packing must be "files" or "chunks"/,
    );
  });

  it('says which setting is wrong', () => {
    assert.throws(
      () => resolveConfig({ root: project('colour = 1'), userConfig: false }),
      /unknown setting "colour"/,
    );
    assert.throws(
      () => resolveConfig({ root: project('[chunk]\nmax_chars = -1'), userConfig: false }),
      /chunk\.max_chars must be a non-negative number/,
    );
    assert.throws(
      () => resolveConfig({ root: project('[embed]\nprovider = "cloud"'), userConfig: false }),
      /embed\.provider must be one of/,
    );
    assert.throws(
      () => resolveConfig({ root: project('max_file_bytes = ['), userConfig: false }),
      /cannot parse/,
    );
    // where, as editors print it (regression: a TOML syntax error had no line number)
    assert.throws(
      () => resolveConfig({ root: project('workers = 2\n[chunk\nmax_chars = 10'), userConfig: false }),
      /cannot parse \S*quarry\.toml:2:\d+: /,
    );
    // every section is checked as strictly as the top level (regression: unknown keys inside a section, a
    // section given as a number, and booleans given as strings were accepted silently)
    assert.throws(
      () => resolveConfig({ root: project('[search]\ntop_kk = 5'), userConfig: false }),
      /unknown setting "search\.top_kk" \(known in \[search\]: top_k, /,
    );
    assert.throws(
      () => resolveConfig({ root: project('search = 5'), userConfig: false }),
      /search must be a section: \[search\], got 5/,
    );
    assert.throws(
      () => resolveConfig({ root: project('include_secrets = "no"'), userConfig: false }),
      /include_secrets must be true or false, got "no"/,
    );
    assert.throws(
      () => resolveConfig({ root: project('[search]\nmmr_lambda = 3'), userConfig: false }),
      /search\.mmr_lambda must be at most 1, got 3/,
    );
    assert.throws(
      () => resolveConfig({ root: project('[llm]\nmodel = 7'), userConfig: false }),
      /llm\.model must be a string/,
    );
  });

  it('publishes its settings as a JSON Schema that matches the checks (docs/quarry.schema.json)', () => {
    const schema = settingsJsonSchema() as {
      properties: Record<string, { properties?: Record<string, unknown> }>;
    };
    assert.ok(schema.properties.search!.properties!.top_k);
    assert.ok(schema.properties.llm!.properties!.model);
    const published = JSON.parse(readFileSync(join(REPO, 'docs', 'quarry.schema.json'), 'utf8'));
    assert.deepEqual(
      published,
      schema,
      'docs/quarry.schema.json is stale: run `quarry schema > docs/quarry.schema.json`',
    );
  });
});

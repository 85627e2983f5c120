import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { DEFAULT_CONFIG, resolveConfig } from '../src/config/config.ts';
import { makeTree, removeTree } from './helpers.ts';

const trees: string[] = [];
after(() => trees.forEach(removeTree));
function project(toml: string): string {
  const root = makeTree({ 'quarry.toml': toml });
  trees.push(root);
  return root;
}

describe('config', () => {
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
  });
});

/*
** quarry_bm25(): FTS5's bm25() with the document counts given, and the leading phrases left out.
**
**   quarry_bm25(skip, n_0, …, n_{P-1}, w_0, w_1, …)
**
** `skip` leading phrases of the query are not scored (an expression that only picks the rows: `(E) AND (all)`
** scores the rows of E by `all` alone); n_i is the number of rows that hold the i-th scored phrase (its document
** count, which quarry keeps); the w are the column weights, as bm25()'s. The score is bm25()'s to the last bit: the
** same formula, the same operations in the same order. What it leaves out is bm25()'s first step, which reads each
** phrase's whole posting list to count its rows: on a large index a query of common words spent a third of its time
** there, and the pruned search (src/store/pruned.ts) runs several such queries.
*/
#include <math.h>
#include <string.h>
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1

static void quarryBm25(
  const Fts5ExtensionApi *pApi, Fts5Context *pFts, sqlite3_context *pCtx, int nVal, sqlite3_value **apVal
){
  const double k1 = 1.2;
  const double b = 0.75;
  int rc = SQLITE_OK;
  int nPhrase = pApi->xPhraseCount(pFts);
  int skip, nScored, i, nTok = 0;
  sqlite3_int64 nRow = 0, nToken = 0;
  double avgdl, D, score = 0.0;
  double aFreq[64];
  sqlite3_value **apW;
  int nW;

  if( nVal<1 ){ sqlite3_result_error(pCtx, "quarry_bm25: no arguments", -1); return; }
  skip = sqlite3_value_int(apVal[0]);
  nScored = nPhrase - skip;
  if( skip<0 || nScored<0 || nScored>64 || nVal<1+nScored ){
    sqlite3_result_error(pCtx, "quarry_bm25: a document count for each scored phrase, at most 64", -1);
    return;
  }
  apW = &apVal[1+nScored];
  nW = nVal - 1 - nScored;

  rc = pApi->xRowCount(pFts, &nRow);
  if( rc==SQLITE_OK ) rc = pApi->xColumnTotalSize(pFts, -1, &nToken);
  if( rc!=SQLITE_OK ){ sqlite3_result_error_code(pCtx, rc); return; }
  avgdl = (double)nToken / (double)nRow;

  /* each scored phrase's own positions, in (column, offset) order: the order in which bm25() meets that phrase's
  ** instances in its merged list (xInst), so each sum is the same to the last bit, without merging every phrase's
  ** positions, the skipped ones too, into one list first */
  memset(aFreq, 0, sizeof(aFreq));
  for(i=0; rc==SQLITE_OK && i<nScored; i++){
    Fts5PhraseIter it;
    int ic = -1, io = 0;
    rc = pApi->xPhraseFirst(pFts, skip+i, &it, &ic, &io);
    while( rc==SQLITE_OK && ic>=0 ){
      aFreq[i] += (nW > ic) ? sqlite3_value_double(apW[ic]) : 1.0;
      pApi->xPhraseNext(pFts, &it, &ic, &io);
    }
  }
  if( rc==SQLITE_OK ) rc = pApi->xColumnSize(pFts, -1, &nTok);
  if( rc!=SQLITE_OK ){ sqlite3_result_error_code(pCtx, rc); return; }
  D = (double)nTok;

  for(i=0; i<nScored; i++){
    sqlite3_int64 nHit = sqlite3_value_int64(apVal[1+i]);
    double idf = log( (nRow - nHit + 0.5) / (nHit + 0.5) );
    if( idf<=0.0 ) idf = 1e-6;
    score += idf * ( (aFreq[i] * (k1 + 1.0)) / (aFreq[i] + k1 * (1 - b + b * D / avgdl)) );
  }
  sqlite3_result_double(pCtx, -1.0 * score);
}

static fts5_api *fts5ApiOf(sqlite3 *db){
  fts5_api *pRet = 0;
  sqlite3_stmt *pStmt = 0;
  if( sqlite3_prepare(db, "SELECT fts5(?1)", -1, &pStmt, 0)==SQLITE_OK ){
    sqlite3_bind_pointer(pStmt, 1, (void*)&pRet, "fts5_api_ptr", 0);
    sqlite3_step(pStmt);
  }
  sqlite3_finalize(pStmt);
  return pRet;
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_quarrybm_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi){
  fts5_api *fts5;
  SQLITE_EXTENSION_INIT2(pApi);
  fts5 = fts5ApiOf(db);
  if( fts5==0 || fts5->iVersion<2 ){
    *pzErrMsg = sqlite3_mprintf("quarry_bm25: this SQLite has no FTS5");
    return SQLITE_ERROR;
  }
  return fts5->xCreateFunction(fts5, "quarry_bm25", 0, quarryBm25, 0);
}

/*
 * eqsearch's Elasticsearch plugin: the window both rescorers take out of the hits and put back.
 */
package org.eqsearch.elasticsearch;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.elasticsearch.search.rescore.RescoreContext;
import org.elasticsearch.search.rescore.Rescorer;

/** The top {@code window_size} hits a rescorer rescores, and the hits with them put back in Lucene's order. */
final class RescoreWindow {
    private RescoreWindow() {}

    /**
     * Copies of the window's hits (the originals stay as they were), recorded in the context for explain.
     * The caller has checked that {@code topDocs} holds hits.
     */
    static ScoreDoc[] take(TopDocs topDocs, RescoreContext context) {
        ScoreDoc[] all = topDocs.scoreDocs;
        int window = Math.min(context.getWindowSize(), all.length);
        ScoreDoc[] rescored = new ScoreDoc[window];
        Set<Integer> windowDocs = new HashSet<>();
        for (int i = 0; i < window; i++) {
            rescored[i] = new ScoreDoc(all[i].doc, all[i].score, all[i].shardIndex);
            windowDocs.add(all[i].doc);
        }
        context.setRescoredDocs(windowDocs);
        return rescored;
    }

    /**
     * The hits with the rescored window in Lucene's QueryRescorer order (score descending, then document id) in
     * place of the first ones, all sorted again when hits lie below the window.
     */
    static TopDocs putBack(TopDocs topDocs, ScoreDoc[] rescored) {
        return putBack(topDocs, rescored, 1f);
    }

    /**
     * The same, the hits below the window with their scores times {@code belowWeight}: Elasticsearch's query rescore
     * weighs them by its {@code query_weight}, as hits the second pass did not match.
     */
    static TopDocs putBack(TopDocs topDocs, ScoreDoc[] rescored, float belowWeight) {
        Arrays.sort(rescored, (a, b) -> a.score != b.score ? Float.compare(b.score, a.score) : Integer.compare(a.doc, b.doc));
        ScoreDoc[] out = topDocs.scoreDocs.clone();
        System.arraycopy(rescored, 0, out, 0, rescored.length);
        if (out.length > rescored.length) {
            for (int i = rescored.length; i < out.length; i++) {
                out[i] = new ScoreDoc(out[i].doc, out[i].score * belowWeight, out[i].shardIndex);
            }
            Arrays.sort(out, Rescorer.SCORE_DOC_COMPARATOR);
        }
        return new TopDocs(topDocs.totalHits, out);
    }
}

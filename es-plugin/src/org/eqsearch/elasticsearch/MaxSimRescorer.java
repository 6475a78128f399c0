/*
 * eqsearch's Elasticsearch plugin: the MaxSim rescorer over stored node vectors.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;

import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.search.Explanation;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.elasticsearch.search.rescore.RescoreContext;
import org.elasticsearch.search.rescore.Rescorer;

/**
 * Replaces each window candidate's score by its MaxSim score (Amador and Zanibbi; ColBERT's late interaction): for every
 * query node the cosine of the most similar candidate node, averaged over the query's nodes (with {@code symmetric},
 * averaged with the same the other way; {@link MaxSimRequest.Scorer}). A candidate without stored node vectors scores
 * {@link MaxSimRequest#MISSING}, below any cosine, so that the caller can tell it apart. The window is ordered by the new scores; hits below it keep theirs.
 */
final class MaxSimRescorer implements Rescorer {
    static final MaxSimRescorer INSTANCE = new MaxSimRescorer();

    static final class Context extends RescoreContext {
        final MaxSimRequest.Scorer scorer;

        Context(int windowSize, MaxSimRequest.Scorer scorer) {
            super(windowSize, INSTANCE);
            this.scorer = scorer;
        }
    }

    @Override
    public TopDocs rescore(TopDocs topDocs, IndexSearcher searcher, RescoreContext rescoreContext) throws IOException {
        Context context = (Context) rescoreContext;
        if (topDocs == null || topDocs.scoreDocs.length == 0) {
            return topDocs;
        }
        ScoreDoc[] rescored = RescoreWindow.take(topDocs, context);
        ScoreDoc[] byDoc = rescored.clone();
        Arrays.sort(byDoc, (a, b) -> Integer.compare(a.doc, b.doc));
        List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
        BinaryDocValues values = null;
        int leafIndex = -1;
        for (ScoreDoc hit : byDoc) {
            context.checkCancellation();
            int at = ReaderUtil.subIndex(hit.doc, leaves);
            LeafReaderContext leaf = leaves.get(at);
            if (at != leafIndex) {
                leafIndex = at;
                values = context.scorer.field == null ? null : DocValues.getBinary(leaf.reader(), context.scorer.field);
            }
            hit.score = context.scorer.score(values, hit.doc - leaf.docBase);
        }
        return RescoreWindow.putBack(topDocs, rescored);
    }

    @Override
    public Explanation explain(int topLevelDocId, IndexSearcher searcher, RescoreContext rescoreContext, Explanation sourceExplanation)
        throws IOException {
        Context context = (Context) rescoreContext;
        if (context.isRescored(topLevelDocId) == false) {
            return sourceExplanation;
        }
        List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
        LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(topLevelDocId, leaves));
        BinaryDocValues values = context.scorer.field == null ? null : DocValues.getBinary(leaf.reader(), context.scorer.field);
        float score = context.scorer.score(values, topLevelDocId - leaf.docBase);
        return Explanation.match(score, "MaxSim of the query's node vectors against the candidate's (eqsearch_maxsim)");
    }
}

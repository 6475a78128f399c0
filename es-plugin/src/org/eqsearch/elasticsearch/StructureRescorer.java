/*
 * eqsearch's Elasticsearch plugin: the structural rescorer itself.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;

import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.index.SortedNumericDocValues;
import org.apache.lucene.search.Explanation;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.elasticsearch.search.rescore.RescoreContext;
import org.elasticsearch.search.rescore.Rescorer;

/**
 * Multiplies each window candidate's score by {@code 1 + shares x factor}: {@code shares} the largest sub-expressions of
 * each kind it shares with the query ({@link StructureMatch}), {@code factor} 1 when the candidate is no larger than the
 * query and {@code query size / candidate size} when it is (with {@code candidate_sizes}; a candidate without a size
 * counts as the query's). The arithmetic follows, operation by operation and in the same float and double precisions,
 * what Elasticsearch computed for eqsearch's earlier rescore query ({@code bool} of {@code match_all} and a
 * {@code function_score} whose {@code field_value_factor} read the size with a float factor of {@code 1 / query size}),
 * so that both give the same scores and hence the same ranking, ties included (broken by document id, as Lucene's
 * {@code QueryRescorer} does). Candidates below the window keep their scores.
 */
final class StructureRescorer implements Rescorer {
    static final StructureRescorer INSTANCE = new StructureRescorer();

    /** What one shard's rescore needs, built from the request by {@link StructureRescorerBuilder}. */
    static final class Context extends RescoreContext {
        final StructureMatch match;
        final String spansField; // null: not mapped in this index, nothing matches
        final String sizeField; // null: no candidate sizes (or not mapped: every candidate counts as the query's size)
        final boolean candidateSizes;
        final int querySize;

        Context(int windowSize, StructureMatch match, String spansField, String sizeField, boolean candidateSizes, int querySize) {
            super(windowSize, INSTANCE);
            this.match = match;
            this.spansField = spansField;
            this.sizeField = sizeField;
            this.candidateSizes = candidateSizes;
            this.querySize = querySize;
        }
    }

    @Override
    public TopDocs rescore(TopDocs topDocs, IndexSearcher searcher, RescoreContext rescoreContext) throws IOException {
        Context context = (Context) rescoreContext;
        if (topDocs == null || topDocs.scoreDocs.length == 0) {
            return topDocs;
        }
        ScoreDoc[] rescored = RescoreWindow.take(topDocs, context); // recorded for explain
        ScoreDoc[] byDoc = rescored.clone();
        Arrays.sort(byDoc, (a, b) -> Integer.compare(a.doc, b.doc));
        List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
        int start = 0;
        while (start < byDoc.length) {
            context.checkCancellation();
            LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(byDoc[start].doc, leaves));
            int end = start;
            int leafEnd = leaf.docBase + leaf.reader().maxDoc();
            while (end < byDoc.length && byDoc[end].doc < leafEnd) {
                end++;
            }
            int[] docs = new int[end - start];
            for (int i = 0; i < docs.length; i++) {
                docs[i] = byDoc[start + i].doc - leaf.docBase;
            }
            float[] factors = factors(leaf, context, docs);
            for (int i = 0; i < docs.length; i++) {
                ScoreDoc hit = byDoc[start + i];
                hit.score = hit.score * factors[i];
            }
            start = end;
        }
        return RescoreWindow.putBack(topDocs, rescored); // Lucene's QueryRescorer order
    }

    /** The rescore's factor of each document (segment-local ids, ascending): {@code 1 + shares x size factor}. */
    static float[] factors(LeafReaderContext leaf, Context context, int[] docs) throws IOException {
        boolean[] matched = new boolean[docs.length];
        double[] shares = context.match.shares(leaf.reader(), context.spansField, docs, matched);
        SortedNumericDocValues sizes = context.sizeField == null ? null : DocValues.getSortedNumeric(leaf.reader(), context.sizeField);
        // field_value_factor's factor is a float; value * factor is then taken in double
        float sizeFactor = (float) (1.0 / context.querySize);
        float[] factors = new float[docs.length];
        for (int i = 0; i < docs.length; i++) {
            if (matched[i] == false) {
                factors[i] = 1.0f; // the match_all clause alone
            } else if (context.candidateSizes == false) {
                factors[i] = (float) (1.0 + shares[i]);
            } else {
                float inner = (float) shares[i];
                double scale;
                long size = context.querySize; // a candidate without a size counts as the query's
                boolean hasSize = sizes != null && sizes.advanceExact(docs[i]);
                if (hasSize) {
                    size = sizes.nextValue();
                }
                if (hasSize && size <= context.querySize) {
                    scale = 1.0;
                } else {
                    scale = 1.0 / ((double) size * sizeFactor);
                }
                float weighed = (float) (inner * scale);
                factors[i] = (float) (1.0 + weighed);
            }
        }
        return factors;
    }

    @Override
    public Explanation explain(int topLevelDocId, IndexSearcher searcher, RescoreContext rescoreContext, Explanation sourceExplanation)
        throws IOException {
        Context context = (Context) rescoreContext;
        if (sourceExplanation == null || context.isRescored(topLevelDocId) == false) {
            return sourceExplanation;
        }
        List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
        LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(topLevelDocId, leaves));
        float factor = factors(leaf, context, new int[] { topLevelDocId - leaf.docBase })[0];
        float score = sourceExplanation.getValue().floatValue() * factor;
        return Explanation.match(
            score,
            "product of:",
            sourceExplanation,
            Explanation.match(factor, "1 + the largest shared sub-expressions of each kind (eqsearch_structure)")
        );
    }
}

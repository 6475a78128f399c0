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
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.VectorUtil;
import org.elasticsearch.search.rescore.RescoreContext;
import org.elasticsearch.search.rescore.Rescorer;

/**
 * Replaces each window candidate's score by its MaxSim score (Amador and Zanibbi; ColBERT's late interaction): for every
 * query node the cosine of the most similar candidate node, averaged over the query's nodes (with {@code symmetric},
 * averaged with the same the other way). A candidate without stored node vectors scores {@link #MISSING}, below any
 * cosine, so that the caller can tell it apart. The window is ordered by the new scores; hits below it keep theirs.
 */
final class MaxSimRescorer implements Rescorer {
    static final MaxSimRescorer INSTANCE = new MaxSimRescorer();
    /** The score of a candidate without node vectors (cosines lie in [-1, 1]). */
    static final float MISSING = -2f;

    static final class Context extends RescoreContext {
        final byte[][] query; // the query's unit rows rounded to int8 (x 127), as the candidates' are stored
        final float[] queryInverseNorms;
        final int dims;
        final boolean symmetric;
        final String field; // null: not mapped here

        Context(int windowSize, float[] query, int dims, boolean symmetric, String field) {
            super(windowSize, INSTANCE);
            this.query = new byte[query.length / dims][dims];
            for (int i = 0; i < query.length; i++) {
                this.query[i / dims][i % dims] = (byte) Math.max(-127, Math.min(127, Math.round(query[i] * 127f)));
            }
            this.queryInverseNorms = NodeVectors.inverseNorms(this.query);
            this.dims = dims;
            this.symmetric = symmetric;
            this.field = field;
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
                values = context.field == null ? null : DocValues.getBinary(leaf.reader(), context.field);
            }
            hit.score = score(context, values, hit.doc - leaf.docBase);
        }
        return RescoreWindow.putBack(topDocs, rescored);
    }

    static float score(Context context, BinaryDocValues values, int doc) throws IOException {
        if (values == null || values.advanceExact(doc) == false) {
            return MISSING;
        }
        NodeVectors candidate = NodeVectors.read(values.binaryValue(), context.dims);
        if (candidate == null || candidate.nodes == 0) {
            return MISSING;
        }
        return candidate.maxSim(context.query, context.queryInverseNorms, context.symmetric);
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
        BinaryDocValues values = context.field == null ? null : DocValues.getBinary(leaf.reader(), context.field);
        float score = score(context, values, topLevelDocId - leaf.docBase);
        return Explanation.match(score, "MaxSim of the query's node vectors against the candidate's (eqsearch_maxsim)");
    }

    /** One equation's stored node vectors: int8 components of unit vectors, scaled by 127 (see eqsearch's documents). */
    static final class NodeVectors {
        static final int FORMAT = 1;
        final int nodes;
        final int dims;
        final byte[][] rows;
        final float[] inverseNorms;

        private NodeVectors(int nodes, int dims, byte[] bytes, int offset) {
            this.nodes = nodes;
            this.dims = dims;
            this.rows = new byte[nodes][];
            for (int n = 0; n < nodes; n++) {
                rows[n] = Arrays.copyOfRange(bytes, offset + n * dims, offset + (n + 1) * dims);
            }
            this.inverseNorms = inverseNorms(rows);
        }

        static float[] inverseNorms(byte[][] rows) {
            float[] out = new float[rows.length];
            for (int n = 0; n < rows.length; n++) {
                int sum = VectorUtil.dotProduct(rows[n], rows[n]);
                out[n] = sum > 0 ? (float) (1.0 / Math.sqrt(sum)) : 0f;
            }
            return out;
        }

        /**
         * The doc value of an ES {@code binary} field (a vint count of values, then each as a vint length and its bytes)
         * holding one blob: a format byte, the node count and the dims as 16-bit little-endian, then nodes x dims int8.
         * Null when the blob is not of this format or of other dims than the query's.
         */
        static NodeVectors read(BytesRef value, int dims) {
            int[] at = { value.offset };
            int end = value.offset + value.length;
            int count = ForwardIndex.readVInt(value.bytes, at, end);
            if (count < 1) {
                return null;
            }
            int length = ForwardIndex.readVInt(value.bytes, at, end);
            int start = at[0];
            if (length < 5 || start + length > end || value.bytes[start] != FORMAT) {
                return null;
            }
            int nodes = (value.bytes[start + 1] & 0xff) | (value.bytes[start + 2] & 0xff) << 8;
            int storedDims = (value.bytes[start + 3] & 0xff) | (value.bytes[start + 4] & 0xff) << 8;
            if (storedDims != dims || 5 + nodes * dims != length) {
                return null;
            }
            return new NodeVectors(nodes, dims, value.bytes, start + 5);
        }

        /**
         * MaxSim of int8 rows against these: integer dot products (Lucene's, with SIMD), each divided by both
         * rows' norms, so a cosine of the two rounded unit vectors.
         */
        float maxSim(byte[][] query, float[] queryInverseNorms, boolean symmetric) {
            int queryNodes = query.length;
            float[] bestOfCandidate = symmetric ? new float[nodes] : null;
            if (symmetric) {
                Arrays.fill(bestOfCandidate, Float.NEGATIVE_INFINITY);
            }
            double total = 0;
            for (int q = 0; q < queryNodes; q++) {
                float best = Float.NEGATIVE_INFINITY;
                for (int n = 0; n < nodes; n++) {
                    // Lucene's int8 dot product: SIMD through the JDK's vector module where the node has it
                    float cosine = VectorUtil.dotProduct(query[q], rows[n]) * queryInverseNorms[q] * inverseNorms[n];
                    if (cosine > best) {
                        best = cosine;
                    }
                    if (symmetric && cosine > bestOfCandidate[n]) {
                        bestOfCandidate[n] = cosine;
                    }
                }
                total += best;
            }
            float score = (float) (total / queryNodes);
            if (symmetric) {
                double back = 0;
                for (float value : bestOfCandidate) {
                    back += value;
                }
                score = (float) ((score + back / nodes) / 2);
            }
            return score;
        }
    }
}

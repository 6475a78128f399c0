/*
 * eqsearch's Elasticsearch plugin: the arithmetic of MaxSim, one candidate against a query's node vectors.
 */
package org.eqsearch.elasticsearch;

import java.util.Arrays;

import org.apache.lucene.util.VectorUtil;

/**
 * MaxSim of a candidate's int8 rows against a query's ({@link MaxSimRequest.Scorer}): for every query row the largest
 * cosine over the candidate's rows (integer dot products divided by both rows' lengths, in float: {@code dot * 1/|q| *
 * 1/|c|}), averaged in double over the query's rows; with {@code symmetric}, averaged with the same the other way.
 * Two implementations give the same floats: {@link SimdMaxSim} (the JDK's vector API, which Elasticsearch's launcher
 * adds to every node), chosen where the node can load it, and {@link Scalar} (Lucene's dot product per pair of rows)
 * otherwise. {@link #KIND} says which this node uses.
 */
abstract class MaxSimKernel {
    /** "simd" or "scalar": the kernel {@link #of} builds on this node. */
    static final String KIND = simdAvailable() ? "simd" : "scalar";

    /** The candidate's score; {@code candidate} has at least one node and the query's dims. */
    abstract float score(NodeVectors candidate);

    /** The kernel for a query's rows (int8, as stored) and their inverse lengths. */
    static MaxSimKernel of(byte[][] query, float[] inverseNorms, int dims, boolean symmetric) {
        if (KIND.equals("simd")) {
            return new SimdMaxSim(query, inverseNorms, dims, symmetric);
        }
        return new Scalar(query, inverseNorms, symmetric);
    }

    private static boolean simdAvailable() {
        if (Boolean.getBoolean("eqsearch.maxsim.scalar")) {
            return false;
        }
        try {
            return SimdMaxSim.lanes() >= 2;
        } catch (LinkageError e) { // the JVM was started without jdk.incubator.vector
            return false;
        }
    }

    /** The reference: each pair of rows by Lucene's int8 dot product (SIMD inside one pair where Lucene has it). */
    static final class Scalar extends MaxSimKernel {
        private final byte[][] query;
        private final float[] queryInverseNorms;
        private final boolean symmetric;

        Scalar(byte[][] query, float[] queryInverseNorms, boolean symmetric) {
            this.query = query;
            this.queryInverseNorms = queryInverseNorms;
            this.symmetric = symmetric;
        }

        @Override
        float score(NodeVectors candidate) {
            int nodes = candidate.nodes;
            int dims = candidate.dims;
            byte[][] rows = new byte[nodes][];
            for (int n = 0; n < nodes; n++) {
                int from = candidate.offset + n * dims;
                rows[n] = Arrays.copyOfRange(candidate.bytes, from, from + dims);
            }
            float[] inverseNorms = NodeVectors.inverseNorms(rows);
            float[] bestOfCandidate = symmetric ? new float[nodes] : null;
            if (symmetric) {
                Arrays.fill(bestOfCandidate, Float.NEGATIVE_INFINITY);
            }
            double total = 0;
            for (int q = 0; q < query.length; q++) {
                float best = Float.NEGATIVE_INFINITY;
                for (int n = 0; n < nodes; n++) {
                    float cosine = VectorUtil.dotProduct(query[q], rows[n]) * queryInverseNorms[q] * inverseNorms[n];
                    best = Math.max(best, cosine);
                    if (symmetric) {
                        bestOfCandidate[n] = Math.max(bestOfCandidate[n], cosine);
                    }
                }
                total += best;
            }
            return combine(total, query.length, bestOfCandidate);
        }
    }

    /** The mean of the query rows' best cosines ({@code total}), averaged with the candidate rows' where given. */
    static float combine(double total, int queryNodes, float[] bestOfCandidate) {
        float score = (float) (total / queryNodes);
        if (bestOfCandidate != null) {
            double back = 0;
            for (float value : bestOfCandidate) {
                back += value;
            }
            score = (float) ((score + back / bestOfCandidate.length) / 2);
        }
        return score;
    }
}

/*
 * eqsearch's Elasticsearch plugin: one equation's stored node vectors and their MaxSim against a query's.
 */
package org.eqsearch.elasticsearch;

import java.util.Arrays;

import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.VectorUtil;

/** One equation's stored node vectors: int8 components of unit vectors, scaled by 127 (see eqsearch's documents). */
final class NodeVectors {
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

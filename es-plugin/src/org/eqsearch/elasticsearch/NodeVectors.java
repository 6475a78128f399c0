/*
 * eqsearch's Elasticsearch plugin: where one equation's stored node vectors lie in its doc value.
 */
package org.eqsearch.elasticsearch;

import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.VectorUtil;

/**
 * One equation's stored node vectors, int8 components of unit vectors scaled by 127 (see eqsearch's documents), read in
 * place: {@code nodes} rows of {@code dims} bytes from {@code offset} in {@code bytes}, which belong to the doc values'
 * reader and are valid until it moves on. The arithmetic is {@link MaxSimKernel}'s.
 */
final class NodeVectors {
    static final int FORMAT = 1;
    final byte[] bytes;
    final int offset;
    final int nodes;
    final int dims;

    private NodeVectors(byte[] bytes, int offset, int nodes, int dims) {
        this.bytes = bytes;
        this.offset = offset;
        this.nodes = nodes;
        this.dims = dims;
    }

    /** Each row's inverse length ({@code 1 / sqrt(Σ x²)}, 0 for a zero row): Lucene's integer dot product. */
    static float[] inverseNorms(byte[][] rows) {
        float[] out = new float[rows.length];
        for (int n = 0; n < rows.length; n++) {
            out[n] = inverseNorm(VectorUtil.dotProduct(rows[n], rows[n]));
        }
        return out;
    }

    /** {@code 1 / sqrt(sumOfSquares)} in float, 0 for 0: every kernel's rounding of a row's length. */
    static float inverseNorm(int sumOfSquares) {
        return sumOfSquares > 0 ? (float) (1.0 / Math.sqrt(sumOfSquares)) : 0f;
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
        return new NodeVectors(value.bytes, start + 5, nodes, dims);
    }
}

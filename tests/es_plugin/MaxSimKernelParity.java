/*
 * eqsearch's plugin tests: MaxSim's two kernels, compared bit for bit on seeded random rows of many shapes
 * (test_maxsim_kernels.py compiles and runs it against the built plugin's jar). With --time, the speed of each.
 */
package org.eqsearch.elasticsearch;

import java.util.Random;

import org.apache.lucene.util.BytesRef;

public final class MaxSimKernelParity {
    private MaxSimKernelParity() {}

    /** A doc value as eqsearch stores one: a vint count, a vint length, then the blob of {@link NodeVectors}. */
    static NodeVectors candidate(Random random, int nodes, int dims, double spread) {
        int length = 5 + nodes * dims;
        byte[] value = new byte[1 + 5 + length];
        int at = 0;
        value[at++] = 1;
        for (int rest = length; ; rest >>>= 7) {
            value[at++] = (byte) (rest > 0x7f ? (rest & 0x7f) | 0x80 : rest);
            if (rest <= 0x7f) {
                break;
            }
        }
        value[at++] = NodeVectors.FORMAT;
        value[at++] = (byte) nodes;
        value[at++] = (byte) (nodes >>> 8);
        value[at++] = (byte) dims;
        value[at++] = (byte) (dims >>> 8);
        for (int i = 0; i < nodes * dims; i++) {
            value[at++] = component(random, spread);
        }
        return NodeVectors.read(new BytesRef(value, 0, at), dims);
    }

    static byte component(Random random, double spread) {
        return (byte) Math.max(-127, Math.min(127, Math.round(random.nextGaussian() * spread)));
    }

    static byte[][] query(Random random, int nodes, int dims, double spread) {
        byte[][] rows = new byte[nodes][dims];
        for (byte[] row : rows) {
            for (int d = 0; d < dims; d++) {
                row[d] = component(random, spread);
            }
        }
        if (nodes > 2) {
            rows[1] = new byte[dims]; // a zero row: its cosines are 0
        }
        return rows;
    }

    public static void main(String[] args) {
        System.out.println("kind " + MaxSimKernel.KIND);
        if (MaxSimKernel.KIND.equals("simd") == false) {
            return;
        }
        Random random = new Random(20261129);
        int cases = 0;
        int differ = 0;
        for (int dims : new int[] { 1, 3, 8, 17, 24, 64, 100, 1100 }) {
            for (int queryNodes : new int[] { 1, 2, 7, 15, 16, 17, 31, 32, 33, 70 }) {
                for (boolean symmetric : new boolean[] { false, true }) {
                    double spread = dims == 1100 ? 120 : 40; // 1100 x 127² passes 2^24: sums that a float could not hold
                    byte[][] rows = query(random, queryNodes, dims, spread);
                    float[] norms = NodeVectors.inverseNorms(rows);
                    MaxSimKernel scalar = new MaxSimKernel.Scalar(rows, norms, symmetric);
                    MaxSimKernel simd = new SimdMaxSim(rows, norms, dims, symmetric);
                    for (int nodes : new int[] { 1, 2, 3, 23, 40 }) {
                        NodeVectors candidate = candidate(random, nodes, dims, spread);
                        float expected = scalar.score(candidate);
                        float got = simd.score(candidate);
                        cases++;
                        if (Float.floatToRawIntBits(expected) != Float.floatToRawIntBits(got)) {
                            differ++;
                            System.out.println(
                                "differ dims " + dims + " query " + queryNodes + " nodes " + nodes + " symmetric " + symmetric
                                    + ": " + expected + " " + got
                            );
                        }
                    }
                }
            }
        }
        System.out.println("cases " + cases + " differ " + differ);
        if (args.length > 0 && args[0].equals("--time")) {
            time(random);
        }
    }

    /** Microseconds per candidate of each kernel: 19 query rows of 64 dims (the development topics' median), candidates of
     * 5-41 rows (the stored median is 23), medians of 9 rounds after 5 of warm-up. */
    static void time(Random random) {
        byte[][] rows = query(random, 19, 64, 16);
        float[] norms = NodeVectors.inverseNorms(rows);
        MaxSimKernel[] kernels = { new MaxSimKernel.Scalar(rows, norms, false), new SimdMaxSim(rows, norms, 64, false) };
        NodeVectors[] candidates = new NodeVectors[200];
        for (int k = 0; k < candidates.length; k++) {
            candidates[k] = candidate(random, 5 + random.nextInt(37), 64, 16);
        }
        double[][] rounds = new double[kernels.length][9];
        float sink = 0;
        for (int round = 0; round < 14; round++) {
            for (int k = 0; k < kernels.length; k++) {
                long began = System.nanoTime();
                for (int repeat = 0; repeat < 100; repeat++) {
                    for (NodeVectors candidate : candidates) {
                        sink += kernels[k].score(candidate);
                    }
                }
                if (round >= 5) {
                    rounds[k][round - 5] = (System.nanoTime() - began) / 1000.0 / 100 / candidates.length;
                }
            }
        }
        for (int k = 0; k < kernels.length; k++) {
            java.util.Arrays.sort(rounds[k]);
            System.out.printf("%s %.2f us per candidate%n", kernels[k].getClass().getSimpleName(), rounds[k][4]);
        }
        System.out.println("checksum " + sink);
    }
}

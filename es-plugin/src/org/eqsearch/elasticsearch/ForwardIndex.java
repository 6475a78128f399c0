/*
 * eqsearch's Elasticsearch plugin: an equation's structural terms as stored in its forward index.
 */
package org.eqsearch.elasticsearch;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;

import org.apache.lucene.util.BytesRef;

/**
 * The forward index of one equation: the distinct terms of its structural field, as the field's analyzer made them,
 * each as a hash with the number of times it occurs, in one binary doc value (eqsearch's
 * {@code engine/index/forward_index.py} writes it). The value of an Elasticsearch {@code binary} field holds a vint
 * count of blobs, then each as a vint length and its bytes; ours is one blob: a format byte, then per term, by hash
 * ascending (unsigned), the hash big-endian and the count as a vint. Format 1 (mapping versions 7-11) writes the
 * whole 8-byte hash, format 2 (version 12 on) its first 4 bytes: about 5 bytes a term instead of 9.
 *
 * <p>The hash is the first 8 bytes of the SHA-256 digest of the term's UTF-8 bytes, read big-endian: defined here
 * and in the Python module alone, and tested for parity. A query's term and another term of a candidate share 4
 * bytes with a probability of about {@code 2^-32} a pair: with ~50 terms on each side, one candidate's count
 * borrowed in about 1.7 million, for one term of its score.
 */
final class ForwardIndex {
    /** The format of 8-byte hashes. */
    static final int LONG_HASHES = 1;
    /** The format of 4-byte hashes, what the engine writes now. */
    static final int SHORT_HASHES = 2;
    /** Eight bytes read as one big-endian long (the JDK's view of a byte array). */
    private static final VarHandle BIG_ENDIAN_LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    /** Four bytes read as one big-endian int. */
    private static final VarHandle BIG_ENDIAN_INT = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);

    private ForwardIndex() {}

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    /** The term's hash: the first 8 bytes of the SHA-256 of its UTF-8 bytes, big-endian. */
    static long hash(MessageDigest digest, BytesRef term) {
        digest.reset();
        digest.update(term.bytes, term.offset, term.length);
        byte[] bytes = digest.digest();
        long hash = 0;
        for (int i = 0; i < Long.BYTES; i++) {
            hash = (hash << 8) | (bytes[i] & 0xff);
        }
        return hash;
    }

    /**
     * Fills {@code freqs[i]} with how often the term of {@code hashes[i]} (ascending unsigned, distinct) occurs in the
     * stored value, 0 when it does not: one merge of the two sorted lists, which stops at the query's last term (in
     * format 2 a term matches on its hash's first 4 bytes). False when the value is not a forward index of a known
     * format (the caller then reads the document's counts from the postings): nothing is guessed from a damaged value.
     */
    static boolean counts(BytesRef value, long[] hashes, int[] freqs) {
        Arrays.fill(freqs, 0);
        byte[] bytes = value.bytes;
        int[] at = { value.offset };
        int end = value.offset + value.length;
        if (readVInt(bytes, at, end) != 1) {
            return false;
        }
        int length = readVInt(bytes, at, end);
        if (length < 1 || at[0] + length > end || (bytes[at[0]] != LONG_HASHES && bytes[at[0]] != SHORT_HASHES)) {
            return false;
        }
        boolean longHashes = bytes[at[0]] == LONG_HASHES;
        int width = longHashes ? Long.BYTES : Integer.BYTES;
        int shift = longHashes ? 0 : Integer.SIZE; // a query's hash cut to what is stored
        end = at[0] + length;
        int pos = at[0] + 1;
        int q = 0;
        long previous = 0;
        boolean first = true;
        while (pos < end && q < hashes.length) {
            if (pos + width >= end) {
                return false; // a hash without its count
            }
            long stored = longHashes ? (long) BIG_ENDIAN_LONG.get(bytes, pos) : Integer.toUnsignedLong((int) BIG_ENDIAN_INT.get(bytes, pos));
            pos += width;
            int count = bytes[pos++];
            if (count < 0) { // a count of 128 or more: a longer vint
                at[0] = pos - 1;
                count = readVInt(bytes, at, end);
                pos = at[0];
            }
            if (count < 1 || (first == false && Long.compareUnsigned(previous, stored) >= 0)) {
                return false; // a count below 1, or hashes out of order
            }
            previous = stored;
            first = false;
            while (q < hashes.length && Long.compareUnsigned(hashes[q] >>> shift, stored) < 0) {
                q++;
            }
            while (q < hashes.length && (hashes[q] >>> shift) == stored) { // two query terms may share 4 bytes
                freqs[q++] = count;
            }
        }
        return true;
    }

    /**
     * A vint at {@code at[0]} (advanced past it), or -1 when it runs past {@code end} or past 32 bits: how the binary doc
     * values Elasticsearch writes count and size their entries (read here and by {@link MaxSimRescorer}).
     */
    static int readVInt(byte[] bytes, int[] at, int end) {
        int result = 0;
        for (int shift = 0; shift < 32 && at[0] < end; shift += 7) {
            byte b = bytes[at[0]++];
            result |= (b & 0x7f) << shift;
            if (b >= 0) {
                return result;
            }
        }
        return -1;
    }
}

/*
 * eqsearch's Elasticsearch plugin: a segment's norms of one field, read once into memory for the first stage.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.search.DocIdSetIterator;

/**
 * The norms of one field in one segment, as {@link TermAtATime} reads them: one for every posting it scores.
 *
 * <p>Why: Lucene's {@code TermScorer} reads each posting's norm through {@code NumericDocValues}, a bounds-checked
 * read of the memory-mapped norms file; at 1M equations that was 29% of the structural request's node CPU
 * ({@code benchmarks/history/search.md}, update 21). BM25's norms are one byte a document, so the field's norms of a
 * segment are copied once into a {@code byte[]} (one byte per document: 1 MB per million equations), shared by every
 * search of the segment and dropped when the segment's core is closed. The values are the same longs, so the same
 * scores. Where the reader has no core cache key or a norm does not fit in a byte, they are read as {@code TermScorer}
 * reads them.
 */
abstract class SegmentNorms {
    /** {@code out[i]} = the norm of {@code docs[i]}, for {@code i < size}; docs increase within one instance. */
    abstract void fill(int[] docs, int size, long[] out) throws IOException;

    /** The instance one term clause reads: this one, shared, unless it reads live norms, which move forward only. */
    SegmentNorms forClause() throws IOException {
        return this;
    }

    private record Key(Object core, String field) {}

    /** A segment whose norms do not fit in bytes: read live, never copied. */
    private static final byte[] NOT_BYTES = new byte[0];
    private static final Map<Key, byte[]> CACHE = new ConcurrentHashMap<>();

    /** The norms of {@code field} in {@code reader}, looked up once a segment; each clause takes {@link #forClause}. */
    static SegmentNorms of(LeafReader reader, String field) throws IOException {
        NumericDocValues norms = reader.getNormValues(field);
        if (norms == null) {
            return ONES;
        }
        IndexReader.CacheHelper helper = reader.getCoreCacheHelper();
        if (helper == null) {
            return new Live(reader, field);
        }
        Key key = new Key(helper.getKey(), field);
        byte[] bytes = CACHE.get(key);
        if (bytes == null) {
            bytes = copy(norms, reader.maxDoc());
            if (CACHE.putIfAbsent(key, bytes) == null) {
                helper.addClosedListener(core -> CACHE.keySet().removeIf(k -> k.core() == core));
            }
        }
        return bytes == NOT_BYTES ? new Live(reader, field) : new Copied(bytes);
    }

    /** How many segments' norms are held (for tests). */
    static int cached() {
        return CACHE.size();
    }

    /** The norms as bytes, {@link #NOT_BYTES} when one is out of a byte's range; documents without one read 0. */
    private static byte[] copy(NumericDocValues norms, int maxDoc) throws IOException {
        byte[] bytes = new byte[maxDoc];
        for (int doc = norms.nextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = norms.nextDoc()) {
            long value = norms.longValue();
            if (value != (byte) value) {
                return NOT_BYTES;
            }
            bytes[doc] = (byte) value;
        }
        return bytes;
    }

    /** A field without norms: {@code TermScorer} reads 1. */
    private static final SegmentNorms ONES = new SegmentNorms() {
        @Override
        void fill(int[] docs, int size, long[] out) {
            java.util.Arrays.fill(out, 0, size, 1L);
        }
    };

    private static final class Copied extends SegmentNorms {
        private final byte[] bytes;

        Copied(byte[] bytes) {
            this.bytes = bytes;
        }

        @Override
        void fill(int[] docs, int size, long[] out) {
            for (int i = 0; i < size; i++) {
                out[i] = bytes[docs[i]];
            }
        }
    }

    /** As {@code TermScorer} reads them: 1 for a document without a norm (none has a posting of the field). */
    private static final class Live extends SegmentNorms {
        private final LeafReader reader;
        private final String field;
        private final NumericDocValues norms;

        Live(LeafReader reader, String field) throws IOException {
            this.reader = reader;
            this.field = field;
            this.norms = reader.getNormValues(field);
        }

        @Override
        SegmentNorms forClause() throws IOException {
            return new Live(reader, field);
        }

        @Override
        void fill(int[] docs, int size, long[] out) throws IOException {
            for (int i = 0; i < size; i++) {
                out[i] = norms.advanceExact(docs[i]) ? norms.longValue() : 1L;
            }
        }
    }
}

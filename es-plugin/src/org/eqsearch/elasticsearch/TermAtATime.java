/*
 * eqsearch's Elasticsearch plugin: the structural first stage scored term at a time.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.Arrays;

import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.search.DocAndFloatFeatureBuffer;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreMode;
import org.apache.lucene.search.Scorer;
import org.apache.lucene.search.TwoPhaseIterator;
import org.apache.lucene.search.Weight;
import org.apache.lucene.util.Bits;

/**
 * The top {@code n} documents of a disjunction of term clauses, found by reading each clause's postings once, in
 * batches, into one accumulator per segment, instead of Lucene's document-at-a-time MaxScore.
 *
 * <p>Why: the structural first stage of a long formula is a disjunction of 50 to 200 rare terms whose 300th best score
 * stays low, so MaxScore can skip little, and its work goes to merging many essential clauses window by window
 * ({@code benchmarks/search.md}, updates 18 and 19). Here each posting is scored once, in batches, by the clause's own
 * scorer (the same {@code SimScorer}, so the same floats), and added to a {@code double}, as Lucene's disjunction
 * sums its clauses. Only the order of the additions differs; a {@code double} holds a sum of up to 2^8 floats exactly
 * when they lie within 2^21 of each other, as a query's BM25 clause scores do, so the order does not change the sum
 * ({@code tests/es_plugin/test_terms_top.py} compares the hits and scores with Lucene's, bit for bit). Deleted
 * documents, and those a filter leaves out, are scored and dropped when the window is collected; ties are broken as
 * Lucene's top-docs collector breaks them, the lower document first.
 */
final class TermAtATime {
    private TermAtATime() {}

    /**
     * The top {@code n} hits of the {@code should} disjunction of {@code clauses} in the searcher among the documents
     * {@code filter} matches (all: null), as {@link ScoredDocsQuery} that matches exactly those documents with their
     * scores.
     */
    static Query topDocs(IndexSearcher searcher, Query[] clauses, Query filter, int n, String description)
        throws IOException {
        Weight[] weights = new Weight[clauses.length];
        for (int i = 0; i < clauses.length; i++) {
            weights[i] = searcher.createWeight(searcher.rewrite(clauses[i]), ScoreMode.COMPLETE, 1f);
        }
        Weight filterWeight = filter == null
            ? null
            : searcher.createWeight(searcher.rewrite(filter), ScoreMode.COMPLETE_NO_SCORES, 1f);
        TopHits top = new TopHits(n);
        DocAndFloatFeatureBuffer batch = new DocAndFloatFeatureBuffer();
        double[] sums = new double[Math.min(WINDOW, Math.max(searcher.getIndexReader().maxDoc(), 1))];
        for (LeafReaderContext leaf : searcher.getIndexReader().leaves()) {
            Accepted accepted = Accepted.of(leaf, filterWeight);
            if (accepted != null) {
                accumulate(leaf, weights, batch, sums, accepted, top);
            }
        }
        return ScoredDocsQuery.of(top.docs(), top.scores(), searcher.getIndexReader(), description);
    }

    /** Documents scored together: an accumulator of 64k {@code double}s stays in the processor's cache. */
    static final int WINDOW = 1 << 16;

    /** Adds up one segment window by window in {@code sums} (zero on entry and on return), offering each window. */
    private static void accumulate(
        LeafReaderContext leaf,
        Weight[] weights,
        DocAndFloatFeatureBuffer batch,
        double[] sums,
        Accepted accepted,
        TopHits top
    ) throws IOException {
        int maxDoc = leaf.reader().maxDoc();
        Scorer[] scorers = new Scorer[weights.length];
        int count = 0;
        for (Weight weight : weights) {
            Scorer scorer = weight.scorer(leaf);
            if (scorer != null && scorer.iterator().nextDoc() != DocIdSetIterator.NO_MORE_DOCS) {
                scorers[count++] = scorer;
            }
        }
        if (count == 0) {
            return;
        }
        for (int from = 0; from < maxDoc; from += WINDOW) {
            int upTo = (int) Math.min((long) from + WINDOW, maxDoc);
            boolean any = false;
            for (int c = 0; c < count; c++) {
                Scorer scorer = scorers[c];
                DocIdSetIterator postings = scorer.iterator();
                while (postings.docID() < upTo) {
                    // Deleted documents are scored too and dropped below: cheaper than filtering every batch.
                    scorer.nextDocsAndScores(upTo, null, batch);
                    int[] docs = batch.docs;
                    float[] scores = batch.features;
                    for (int i = 0; i < batch.size; i++) {
                        sums[docs[i] - from] += scores[i];
                    }
                    any |= batch.size > 0;
                }
            }
            if (any) {
                collect(sums, upTo - from, from, leaf.docBase, accepted, top);
            }
        }
    }

    /**
     * Offers the window's matched live documents to {@code top} and clears the accumulator for the next window. Most
     * documents are unmatched (0) or below the weakest kept hit, so the scan tests one bound, which is seldom
     * passed, and clears the window in one fill: a branch on every document's match would be mispredicted about as
     * often as it is taken.
     */
    private static void collect(double[] sums, int length, int from, int docBase, Accepted accepted, TopHits top)
        throws IOException {
        double floor = top.floor();
        for (int i = 0; i < length; i++) {
            double sum = sums[i];
            if (sum > floor) { // a match (every clause's BM25 is positive) that may beat the weakest kept hit
                float score = (float) sum;
                if (top.competitive(score) && accepted.test(from + i)) {
                    top.offer(docBase + from + i, score);
                    floor = top.floor();
                }
            }
        }
        Arrays.fill(sums, 0, length, 0d);
    }

    /**
     * Whether a segment's document may be kept: live, and matched by the filter if there is one. Asked in increasing
     * document order, so the filter's iterator only moves forward.
     */
    static final class Accepted {
        private final Bits live;
        private final DocIdSetIterator filter; // null: no filter
        private final TwoPhaseIterator twoPhase; // the filter's exact check after its approximation, or null

        private Accepted(Bits live, DocIdSetIterator filter, TwoPhaseIterator twoPhase) {
            this.live = live;
            this.filter = filter;
            this.twoPhase = twoPhase;
        }

        /** Null when the filter matches nothing in the segment. */
        static Accepted of(LeafReaderContext leaf, Weight filterWeight) throws IOException {
            Bits live = leaf.reader().getLiveDocs();
            if (filterWeight == null) {
                return new Accepted(live, null, null);
            }
            Scorer scorer = filterWeight.scorer(leaf);
            if (scorer == null) {
                return null;
            }
            TwoPhaseIterator twoPhase = scorer.twoPhaseIterator();
            return new Accepted(live, twoPhase == null ? scorer.iterator() : twoPhase.approximation(), twoPhase);
        }

        boolean test(int doc) throws IOException {
            if (live != null && live.get(doc) == false) {
                return false;
            }
            if (filter == null) {
                return true;
            }
            int at = filter.docID() < doc ? filter.advance(doc) : filter.docID();
            return at == doc && (twoPhase == null || twoPhase.matches());
        }
    }

    /** The best {@code n} (score, document) pairs offered in increasing document order: a bounded min-heap. */
    static final class TopHits {
        private final int capacity;
        private final int[] docs;
        private final float[] scores;
        private int size;

        TopHits(int capacity) {
            this.capacity = capacity;
            this.docs = new int[capacity];
            this.scores = new float[capacity];
        }

        /**
         * A bound below which no sum can be kept: 0 (no match) until {@code capacity} hits are kept, then the weakest
         * kept score (a {@code double} above which every sum whose {@code float} beats it lies).
         */
        double floor() {
            return size < capacity ? 0d : capacity > 0 ? scores[0] : Double.POSITIVE_INFINITY;
        }

        /** Whether a document of this score, after every one offered so far, would be kept. */
        boolean competitive(float score) {
            return size < capacity || (capacity > 0 && score > scores[0]);
        }

        /** Documents come in increasing order, so a tie with the weakest kept one loses (Lucene's order). */
        void offer(int doc, float score) {
            if (size < capacity) {
                docs[size] = doc;
                scores[size] = score;
                up(size++);
            } else if (capacity > 0 && score > scores[0]) {
                docs[0] = doc;
                scores[0] = score;
                down(0);
            }
        }

        /** Weaker first: the lower score, and of equal scores the later document. */
        private boolean weaker(int a, int b) {
            return scores[a] < scores[b] || (scores[a] == scores[b] && docs[a] > docs[b]);
        }

        private void up(int at) {
            while (at > 0) {
                int parent = (at - 1) >>> 1;
                if (weaker(at, parent) == false) {
                    return;
                }
                swap(at, parent);
                at = parent;
            }
        }

        private void down(int at) {
            while (true) {
                int child = 2 * at + 1;
                if (child >= size) {
                    return;
                }
                if (child + 1 < size && weaker(child + 1, child)) {
                    child++;
                }
                if (weaker(child, at) == false) {
                    return;
                }
                swap(at, child);
                at = child;
            }
        }

        private void swap(int a, int b) {
            int doc = docs[a];
            docs[a] = docs[b];
            docs[b] = doc;
            float score = scores[a];
            scores[a] = scores[b];
            scores[b] = score;
        }

        int[] docs() {
            return Arrays.copyOf(docs, size);
        }

        float[] scores() {
            return Arrays.copyOf(scores, size);
        }
    }
}

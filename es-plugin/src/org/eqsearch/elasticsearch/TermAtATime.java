/*
 * eqsearch's Elasticsearch plugin: the structural first stage scored term at a time.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.Arrays;

import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.TermState;
import org.apache.lucene.index.TermStates;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.CollectionStatistics;
import org.apache.lucene.search.DocAndFloatFeatureBuffer;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreMode;
import org.apache.lucene.search.Scorer;
import org.apache.lucene.search.TermStatistics;
import org.apache.lucene.search.TwoPhaseIterator;
import org.apache.lucene.search.Weight;
import org.apache.lucene.search.similarities.Similarity.BulkSimScorer;
import org.apache.lucene.search.similarities.Similarity.SimScorer;
import org.apache.lucene.util.ArrayUtil;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.IOSupplier;

/**
 * The top {@code n} documents of a disjunction of term clauses, found by reading each clause's postings once, in
 * batches, into one accumulator per segment, instead of Lucene's document-at-a-time MaxScore.
 *
 * <p>Why: the structural first stage of a long formula is a disjunction of 50 to 200 rare terms whose 300th best score
 * stays low, so MaxScore can skip little, and its work goes to merging many essential clauses window by window
 * ({@code benchmarks/history/search.md}, updates 18 and 19). Here each posting is scored once, in batches, as Lucene's
 * {@code TermScorer} scores a batch (the clause's {@code SimScorer}, made as {@code TermQuery} makes it, so the same
 * floats), with the norms read from a copy of the segment's ({@link SegmentNorms}), and added to a
 * {@code double}, as Lucene's disjunction sums its clauses. Only the order of the additions differs; a {@code double}
 * holds a sum of up to 2^8 floats exactly when they lie within 2^21 of each other, as a query's BM25 clause scores
 * do, so the order does not change the sum ({@code tests/es_plugin/test_terms_top.py} and
 * {@code test_terms_top_norms.py} compare the hits and scores with Lucene's, bit for bit). Deleted
 * documents, and those a filter leaves out, are scored and dropped when the window is collected; ties are broken as
 * Lucene's top-docs collector breaks them, the lower document first.
 */
final class TermAtATime {
    private TermAtATime() {}

    /** A term clause of the disjunction: the term, its statistics in the searcher, its boost. */
    record Clause(Term term, TermStates states, float boost) {}

    /**
     * The top {@code n} hits of the {@code should} disjunction of {@code clauses} (term queries of one field, boosted)
     * in the searcher among the documents {@code filter} matches (all: null), as {@link ScoredDocsQuery} that matches
     * exactly those documents with their scores.
     */
    static Query topDocs(IndexSearcher searcher, String field, Clause[] clauses, Query filter, int n, String description)
        throws IOException {
        Weight filterWeight = filter == null
            ? null
            : searcher.createWeight(searcher.rewrite(filter), ScoreMode.COMPLETE_NO_SCORES, 1f);
        TopHits top = new TopHits(n);
        CollectionStatistics collection = searcher.collectionStatistics(field);
        if (collection != null) {
            Clause[] present = Arrays.stream(clauses).filter(c -> c.states().docFreq() > 0).toArray(Clause[]::new);
            BulkSimScorer[] scorers = new BulkSimScorer[present.length];
            for (int i = 0; i < present.length; i++) {
                scorers[i] = simScorer(searcher, collection, present[i]).asBulkSimScorer();
            }
            Batch batch = new Batch();
            double[] sums = new double[Math.min(WINDOW, Math.max(searcher.getIndexReader().maxDoc(), 1))];
            for (LeafReaderContext leaf : searcher.getIndexReader().leaves()) {
                Accepted accepted = Accepted.of(leaf, filterWeight);
                if (accepted != null) {
                    accumulate(leaf, field, present, scorers, batch, sums, accepted, top);
                }
            }
        }
        return ScoredDocsQuery.of(top.docs(), top.scores(), searcher.getIndexReader(), description);
    }

    /**
     * The clause's BM25 as Lucene's {@code TermQuery} weighs it inside a {@code BoostQuery}: the searcher's
     * similarity, its collection and term statistics, the boost.
     */
    private static SimScorer simScorer(IndexSearcher searcher, CollectionStatistics collection, Clause clause)
        throws IOException {
        TermStates states = clause.states();
        TermStatistics term = searcher.termStatistics(clause.term(), states.docFreq(), states.totalTermFreq());
        return searcher.getSimilarity().scorer(clause.boost(), collection, term);
    }

    /** Documents scored together: an accumulator of 64k {@code double}s stays in the processor's cache. */
    static final int WINDOW = 1 << 16;

    /** One batch of a clause's postings: documents, their frequencies then scores, their norms. */
    private static final class Batch {
        final DocAndFloatFeatureBuffer postings = new DocAndFloatFeatureBuffer();
        long[] norms = new long[0];
    }

    /**
     * Adds up one segment window by window in {@code sums} (zero on entry and on return), offering each window. Each
     * batch is scored as Lucene's {@code TermScorer.nextDocsAndScores} scores it (the postings' frequencies, the
     * documents' norms, the similarity's bulk scorer), the norms read from {@link SegmentNorms}.
     */
    private static void accumulate(
        LeafReaderContext leaf,
        String field,
        Clause[] clauses,
        BulkSimScorer[] scorers,
        Batch batch,
        double[] sums,
        Accepted accepted,
        TopHits top
    ) throws IOException {
        Terms terms = leaf.reader().terms(field);
        if (terms == null) {
            return;
        }
        int maxDoc = leaf.reader().maxDoc();
        PostingsEnum[] postings = new PostingsEnum[clauses.length];
        BulkSimScorer[] bulk = new BulkSimScorer[clauses.length];
        SegmentNorms[] norms = new SegmentNorms[clauses.length];
        SegmentNorms segmentNorms = null; // looked up once, at the first clause with postings here
        int count = 0;
        for (int c = 0; c < clauses.length; c++) {
            IOSupplier<TermState> supplier = clauses[c].states().get(leaf);
            TermState state = supplier == null ? null : supplier.get();
            if (state == null) {
                continue;
            }
            TermsEnum seek = terms.iterator();
            seek.seekExact(clauses[c].term().bytes(), state);
            PostingsEnum at = seek.postings(null, PostingsEnum.FREQS);
            if (at.nextDoc() != DocIdSetIterator.NO_MORE_DOCS) {
                postings[count] = at;
                bulk[count] = scorers[c];
                if (segmentNorms == null) {
                    segmentNorms = SegmentNorms.of(leaf.reader(), field);
                }
                norms[count++] = segmentNorms.forClause();
            }
        }
        if (count == 0) {
            return;
        }
        DocAndFloatFeatureBuffer buffer = batch.postings;
        for (int from = 0; from < maxDoc; from += WINDOW) {
            int upTo = (int) Math.min((long) from + WINDOW, maxDoc);
            boolean any = false;
            for (int c = 0; c < count; c++) {
                PostingsEnum clause = postings[c];
                while (clause.docID() < upTo) {
                    // Deleted documents are scored too and dropped below: cheaper than filtering every batch.
                    clause.nextPostings(upTo, buffer);
                    int size = buffer.size;
                    if (batch.norms.length < size) {
                        batch.norms = new long[ArrayUtil.oversize(size, Long.BYTES)];
                    }
                    norms[c].fill(buffer.docs, size, batch.norms);
                    float[] scores = buffer.features; // the frequencies, scored in place
                    bulk[c].score(size, scores, batch.norms, scores);
                    int[] docs = buffer.docs;
                    for (int i = 0; i < size; i++) {
                        sums[docs[i] - from] += scores[i];
                    }
                    any |= size > 0;
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

/*
 * eqsearch's Elasticsearch plugin: the window's BM25 over the structural terms, read from the forward index.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.TermStates;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.CollectionStatistics;
import org.apache.lucene.search.Explanation;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.similarities.Similarity;
import org.apache.lucene.util.BytesRef;
import org.elasticsearch.search.rescore.RescoreContext;
import org.elasticsearch.search.rescore.Rescorer;

/**
 * The BM25 of the query's terms (each with its count as boost) for each window candidate, added to its score
 * ({@code add}) or in its place ({@code replace}): what a {@code rescore} of a {@code bool} of {@code term} clauses with
 * {@code score_mode: total} and query weights 1 and 1 (or 0 and 1) gives, to the bit. The terms' statistics come from
 * the shard's searcher and the arithmetic from the field's own similarity, as Lucene's {@code TermWeight} gets them;
 * each candidate's term counts come from its forward index ({@link ForwardIndex}, binary doc values) and its length
 * from the field's norms, so that no posting list is walked. The clauses' scores are summed in double and rounded to
 * float, as Lucene's disjunction does: floats of a few powers of two apart add exactly in double, so the order of the
 * sum does not matter. A candidate without a forward index value (or with a damaged one) gets its counts from the
 * postings instead: the same score, at the plain query's cost.
 */
final class Bm25Rescorer implements Rescorer {
    static final Bm25Rescorer INSTANCE = new Bm25Rescorer();

    /** What one shard's rescore needs, built from the request by {@link Bm25RescorerBuilder}. */
    static final class Context extends RescoreContext {
        final String[] terms;
        final float[] boosts;
        final String field; // null: not mapped in this index, nothing matches
        final String forwardField; // null: not mapped, every candidate's counts come from the postings
        final boolean replace;
        final RareTerms exceptRare; // null: every term; else the terms this rule does not find rare in the shard

        Context(int windowSize, String[] terms, float[] boosts, String field, String forwardField, boolean replace, RareTerms exceptRare) {
            super(windowSize, INSTANCE);
            this.terms = terms;
            this.boosts = boosts;
            this.field = field;
            this.forwardField = forwardField;
            this.replace = replace;
            this.exceptRare = exceptRare;
        }
    }

    /** The query's terms found in the shard, by hash ascending, each with its scorer. */
    private record Prepared(long[] hashes, BytesRef[] terms, Similarity.SimScorer[] scorers) {}

    private record Found(long hash, BytesRef term, Similarity.SimScorer scorer) {}

    static Prepared prepare(IndexSearcher searcher, Context context) throws IOException {
        if (context.field == null) {
            return new Prepared(new long[0], new BytesRef[0], new Similarity.SimScorer[0]);
        }
        CollectionStatistics collection = searcher.collectionStatistics(context.field);
        TermStates[] allStates = collection == null ? null : TermLookup.build(searcher, context.field, context.terms);
        long[] docFreqs = new long[context.terms.length];
        for (int i = 0; i < context.terms.length && collection != null; i++) {
            docFreqs[i] = allStates[i].docFreq();
        }
        boolean[] rare = context.exceptRare == null ? null : context.exceptRare.choose(docFreqs, collection == null ? 0 : collection.docCount());
        MessageDigest digest = ForwardIndex.sha256();
        List<Found> found = new ArrayList<>();
        for (int i = 0; i < context.terms.length && collection != null; i++) {
            Term term = new Term(context.field, context.terms[i]);
            TermStates states = allStates[i];
            if (context.exceptRare != null && (rare == null || rare[i])) {
                continue; // matched by the first stage (every term, when the rule kept them all)
            }
            if (states.docFreq() == 0) {
                continue; // Lucene's TermWeight scores nothing for a term no document holds
            }
            Similarity.SimScorer scorer = searcher.getSimilarity()
                .scorer(context.boosts[i], collection, searcher.termStatistics(term, states.docFreq(), states.totalTermFreq()));
            found.add(new Found(ForwardIndex.hash(digest, term.bytes()), BytesRef.deepCopyOf(term.bytes()), scorer));
        }
        found.sort((a, b) -> Long.compareUnsigned(a.hash(), b.hash()));
        long[] hashes = new long[found.size()];
        BytesRef[] terms = new BytesRef[found.size()];
        Similarity.SimScorer[] scorers = new Similarity.SimScorer[found.size()];
        for (int i = 0; i < hashes.length; i++) {
            hashes[i] = found.get(i).hash();
            terms[i] = found.get(i).term();
            scorers[i] = found.get(i).scorer();
        }
        return new Prepared(hashes, terms, scorers);
    }

    @Override
    public TopDocs rescore(TopDocs topDocs, IndexSearcher searcher, RescoreContext rescoreContext) throws IOException {
        Context context = (Context) rescoreContext;
        if (topDocs == null || topDocs.scoreDocs.length == 0) {
            return topDocs;
        }
        Prepared prepared = prepare(searcher, context);
        if (prepared.hashes.length == 0 && context.replace == false) {
            return topDocs; // nothing to add: the plain request sends no rescore then, and Lucene's order stays
        }
        ScoreDoc[] rescored = RescoreWindow.take(topDocs, context);
        ScoreDoc[] byDoc = rescored.clone();
        Arrays.sort(byDoc, (a, b) -> Integer.compare(a.doc, b.doc));
        List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
        LeafScores scores = null;
        int leafIndex = -1;
        for (ScoreDoc hit : byDoc) {
            int at = ReaderUtil.subIndex(hit.doc, leaves);
            if (at != leafIndex) {
                context.checkCancellation();
                leafIndex = at;
                scores = new LeafScores(leaves.get(at).reader(), context, prepared);
            }
            hit.score = scores.combined(hit.score, hit.doc - leaves.get(at).docBase);
        }
        return RescoreWindow.putBack(topDocs, rescored, context.replace ? 0f : 1f); // query weight 0 or 1
    }

    /** One segment's readers: forward index, norms, and the postings for a candidate without a forward index value. */
    private static final class LeafScores {
        private final LeafReader reader;
        private final Context context;
        private final Prepared prepared;
        private final BinaryDocValues forward;
        private final NumericDocValues norms;
        private final int[] freqs;

        LeafScores(LeafReader reader, Context context, Prepared prepared) throws IOException {
            this.reader = reader;
            this.context = context;
            this.prepared = prepared;
            boolean any = prepared.hashes.length > 0;
            this.forward = any && context.forwardField != null ? DocValues.getBinary(reader, context.forwardField) : null;
            this.norms = any ? reader.getNormValues(context.field) : null;
            this.freqs = new int[prepared.hashes.length];
        }

        /** The candidate's new score from its first-pass score, as the query rescore's {@code total} combines them. */
        float combined(float score, int doc) throws IOException {
            if (prepared.hashes.length == 0) {
                return context.replace ? 0f : score;
            }
            if (forward == null || forward.advanceExact(doc) == false || ForwardIndex.counts(forward.binaryValue(), prepared.hashes, freqs) == false) {
                fromPostings(doc);
            }
            long norm = 1L; // as Lucene's TermScorer: 1 without norms
            if (norms != null && norms.advanceExact(doc)) {
                norm = norms.longValue();
            }
            double sum = 0;
            boolean matched = false;
            for (int i = 0; i < freqs.length; i++) {
                if (freqs[i] > 0) {
                    sum += prepared.scorers[i].score((float) freqs[i], norm);
                    matched = true;
                }
            }
            if (matched == false) {
                return context.replace ? 0f : score; // the first pass's score times its weight, 0 or 1
            }
            return context.replace ? (float) sum : score + (float) sum;
        }

        private void fromPostings(int doc) throws IOException {
            Arrays.fill(freqs, 0);
            Terms terms = reader.terms(context.field);
            if (terms == null) {
                return;
            }
            TermsEnum termsEnum = terms.iterator();
            PostingsEnum postings = null;
            for (int i = 0; i < freqs.length; i++) {
                if (termsEnum.seekExact(prepared.terms[i])) {
                    postings = termsEnum.postings(postings, PostingsEnum.FREQS);
                    if (postings.advance(doc) == doc) {
                        freqs[i] = postings.freq();
                    }
                }
            }
        }
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
        LeafScores scores = new LeafScores(leaf.reader(), context, prepare(searcher, context));
        float first = sourceExplanation.getValue().floatValue();
        float score = scores.combined(first, topLevelDocId - leaf.docBase);
        String what = "BM25 of " + context.terms.length + " structural terms from the forward index (eqsearch_bm25)";
        if (context.replace) {
            return Explanation.match(score, what + ", in place of the first pass's score", sourceExplanation);
        }
        return Explanation.match(score, "sum of:", sourceExplanation, Explanation.match(score - first, what));
    }
}

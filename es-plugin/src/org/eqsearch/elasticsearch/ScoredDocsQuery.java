/*
 * eqsearch's Elasticsearch plugin: a query over documents whose scores were computed beforehand.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.search.Explanation;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.QueryVisitor;
import org.apache.lucene.search.ScoreMode;
import org.apache.lucene.search.Scorer;
import org.apache.lucene.search.ScorerSupplier;
import org.apache.lucene.search.Weight;

/**
 * Matches the given documents of one reader with the given scores (times the query's boost): what
 * {@link TermAtATime} rewrites a first stage to, once it has scored it, so that the search's collector, rescorers and
 * fetch see an ordinary query. It is valid only for the reader it was computed on, which it keeps for
 * {@link #equals}.
 */
final class ScoredDocsQuery extends Query {
    private final int[] docs; // global document numbers, increasing
    private final float[] scores;
    private final int[] leafStarts; // for leaf ord i, its documents are docs[leafStarts[i]:leafStarts[i + 1]]
    private final Object readerKey;
    private final String description;

    private ScoredDocsQuery(int[] docs, float[] scores, int[] leafStarts, Object readerKey, String description) {
        this.docs = docs;
        this.scores = scores;
        this.leafStarts = leafStarts;
        this.readerKey = readerKey;
        this.description = description;
    }

    /** The query over {@code docs} (global numbers of {@code reader}, any order) with their {@code scores}. */
    static ScoredDocsQuery of(int[] docs, float[] scores, IndexReader reader, String description) {
        Integer[] order = new Integer[docs.length];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> Integer.compare(docs[a], docs[b]));
        int[] sortedDocs = new int[docs.length];
        float[] sortedScores = new float[docs.length];
        for (int i = 0; i < order.length; i++) {
            sortedDocs[i] = docs[order[i]];
            sortedScores[i] = scores[order[i]];
        }
        List<LeafReaderContext> leaves = reader.leaves();
        int[] leafStarts = new int[leaves.size() + 1];
        int at = 0;
        for (int ord = 0; ord < leaves.size(); ord++) {
            leafStarts[ord] = at;
            int end = leaves.get(ord).docBase + leaves.get(ord).reader().maxDoc();
            while (at < sortedDocs.length && sortedDocs[at] < end) {
                at++;
            }
        }
        leafStarts[leaves.size()] = at;
        return new ScoredDocsQuery(sortedDocs, sortedScores, leafStarts, reader.getContext().id(), description);
    }

    @Override
    public Weight createWeight(IndexSearcher searcher, ScoreMode scoreMode, float boost) {
        if (searcher.getIndexReader().getContext().id() != readerKey) {
            throw new IllegalStateException("[" + description + "] was computed on another reader of the index");
        }
        return new Weight(this) {
            @Override
            public ScorerSupplier scorerSupplier(LeafReaderContext leaf) {
                int from = leafStarts[leaf.ord];
                int to = leafStarts[leaf.ord + 1];
                if (from == to) {
                    return null;
                }
                return new DefaultScorerSupplier(new ListScorer(from, to, leaf.docBase, boost));
            }

            @Override
            public Explanation explain(LeafReaderContext leaf, int doc) {
                int found = Arrays.binarySearch(docs, leafStarts[leaf.ord], leafStarts[leaf.ord + 1], leaf.docBase + doc);
                if (found < 0) {
                    return Explanation.noMatch("not among the top documents of " + description);
                }
                return Explanation.match(scores[found] * boost, description + ", scored term at a time");
            }

            @Override
            public boolean isCacheable(LeafReaderContext leaf) {
                return false;
            }
        };
    }

    /** Iterates docs[from:to] of one leaf. */
    private final class ListScorer extends Scorer {
        private final int from;
        private final int to;
        private final int docBase;
        private final float boost;
        private final float maxScore;
        private int at;

        ListScorer(int from, int to, int docBase, float boost) {
            this.from = from;
            this.to = to;
            this.docBase = docBase;
            this.boost = boost;
            float max = 0f;
            for (int i = from; i < to; i++) {
                max = Math.max(max, scores[i] * boost);
            }
            this.maxScore = max;
            this.at = from - 1;
        }

        @Override
        public int docID() {
            return at < from ? -1 : at >= to ? DocIdSetIterator.NO_MORE_DOCS : docs[at] - docBase;
        }

        @Override
        public float score() {
            return scores[at] * boost;
        }

        @Override
        public float getMaxScore(int upTo) {
            return maxScore;
        }

        @Override
        public DocIdSetIterator iterator() {
            return new DocIdSetIterator() {
                @Override
                public int docID() {
                    return ListScorer.this.docID();
                }

                @Override
                public int nextDoc() {
                    at = Math.min(at + 1, to);
                    return docID();
                }

                @Override
                public int advance(int target) {
                    int global = target + docBase;
                    at = Math.max(at, from);
                    while (at < to && docs[at] < global) {
                        at++;
                    }
                    return docID();
                }

                @Override
                public long cost() {
                    return to - from;
                }
            };
        }
    }

    @Override
    public void visit(QueryVisitor visitor) {
        visitor.visitLeaf(this);
    }

    @Override
    public String toString(String field) {
        return description + " (" + docs.length + " documents, scored term at a time)";
    }

    @Override
    public boolean equals(Object other) {
        return sameClassAs(other)
            && readerKey == ((ScoredDocsQuery) other).readerKey
            && Arrays.equals(docs, ((ScoredDocsQuery) other).docs)
            && Arrays.equals(scores, ((ScoredDocsQuery) other).scores);
    }

    @Override
    public int hashCode() {
        return Objects.hash(classHash(), System.identityHashCode(readerKey), Arrays.hashCode(docs), Arrays.hashCode(scores));
    }
}

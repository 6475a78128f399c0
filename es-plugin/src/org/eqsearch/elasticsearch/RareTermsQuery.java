/*
 * eqsearch's Elasticsearch plugin: the Lucene side of the eqsearch_terms query.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import org.apache.lucene.index.Term;
import org.apache.lucene.index.TermStates;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.BoostQuery;
import org.apache.lucene.search.CollectionStatistics;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.QueryVisitor;
import org.apache.lucene.search.TermQuery;

/**
 * Rewrites, in the shard's searcher, to the {@code BooleanQuery} of {@code should} clauses that Elasticsearch makes of
 * a {@code bool} of {@code term} clauses: a {@code TermQuery} per term, in a {@code BoostQuery} where its boost is not
 * 1, in the order given; with a {@link RareTerms} rule, of the terms it chooses in that searcher only, each term's
 * statistics looked up once for both. The same query, so the same scores and the same pruning as the plain request.
 */
final class RareTermsQuery extends Query {
    private final String field;
    private final String[] terms;
    private final float[] boosts;
    private final RareTerms rare;
    private final int top;
    private final Query filter;

    /**
     * With {@code top} > 0, rewrites to its best {@code top} documents among those {@code filter} matches (all: null),
     * scored term at a time ({@link TermAtATime}).
     */
    RareTermsQuery(String field, String[] terms, float[] boosts, RareTerms rare, int top, Query filter) {
        this.field = field;
        this.terms = terms;
        this.boosts = boosts;
        this.rare = rare;
        this.top = top;
        this.filter = filter;
    }

    @Override
    public Query rewrite(IndexSearcher searcher) throws IOException {
        boolean[] chosen = null;
        // looked up once, together: the rule's frequencies, then the weights'
        TermStates[] states = TermLookup.build(searcher, field, terms);
        if (rare != null) {
            long[] docFreqs = new long[terms.length];
            for (int i = 0; i < terms.length; i++) {
                docFreqs[i] = states[i].docFreq();
            }
            CollectionStatistics collection = searcher.collectionStatistics(field);
            chosen = rare.choose(docFreqs, collection == null ? 0 : collection.docCount());
        }
        List<TermAtATime.Clause> clauses = new ArrayList<>();
        for (int i = 0; i < terms.length; i++) {
            if (chosen == null || chosen[i]) {
                clauses.add(new TermAtATime.Clause(new Term(field, terms[i]), states[i], boosts[i]));
            }
        }
        if (top > 0) {
            TermAtATime.Clause[] scored = clauses.toArray(new TermAtATime.Clause[0]);
            return TermAtATime.topDocs(searcher, field, scored, filter, top, toString(field));
        }
        BooleanQuery.Builder bool = new BooleanQuery.Builder();
        for (TermAtATime.Clause clause : clauses) {
            Query term = new TermQuery(clause.term(), clause.states());
            bool.add(clause.boost() == 1f ? term : new BoostQuery(term, clause.boost()), BooleanClause.Occur.SHOULD);
        }
        return bool.build();
    }

    @Override
    public void visit(QueryVisitor visitor) {
        if (visitor.acceptField(field)) {
            visitor.visitLeaf(this);
        }
    }

    @Override
    public String toString(String defaultField) {
        String rule = rare == null ? "" : ", rare " + rare.maxShare() + "/" + rare.minMatches() + "/" + rare.atLeast();
        String taat = top > 0 ? ", top " + top + (filter == null ? "" : ", filter " + filter) : "";
        return TermsQueryBuilder.NAME + "(" + field + ": " + terms.length + " terms" + rule + taat + ")";
    }

    @Override
    public boolean equals(Object other) {
        return sameClassAs(other)
            && field.equals(((RareTermsQuery) other).field)
            && Arrays.equals(terms, ((RareTermsQuery) other).terms)
            && Arrays.equals(boosts, ((RareTermsQuery) other).boosts)
            && Objects.equals(rare, ((RareTermsQuery) other).rare)
            && top == ((RareTermsQuery) other).top
            && Objects.equals(filter, ((RareTermsQuery) other).filter);
    }

    @Override
    public int hashCode() {
        return Objects.hash(classHash(), field, Arrays.hashCode(terms), Arrays.hashCode(boosts), rare, top, filter);
    }
}

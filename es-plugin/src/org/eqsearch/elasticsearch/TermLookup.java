/*
 * eqsearch's Elasticsearch plugin: many terms' statistics looked up in one pass over the terms dictionary.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.Arrays;

import org.apache.lucene.index.IndexReaderContext;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.TermStates;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.util.BytesRef;

/**
 * What {@code TermStates.build(searcher, term, true)} gives for each of a formula's 50 to 200 terms, found with one
 * terms enumerator per segment seeking the terms in sorted order, instead of a new enumerator for every term: a
 * query's terms share long prefixes ({@code V:*|O:=|n}, {@code V:*|O:=|n.n}), so each seek starts where the last one
 * left the dictionary's blocks. The same states, so the same statistics and scores.
 */
final class TermLookup {
    private TermLookup() {}

    /** The states of {@code terms} in {@code field}, in the searcher's top reader context, in the order given. */
    static TermStates[] build(IndexSearcher searcher, String field, String[] terms) throws IOException {
        IndexReaderContext top = searcher.getTopReaderContext();
        BytesRef[] bytes = new BytesRef[terms.length];
        Integer[] order = new Integer[terms.length];
        TermStates[] states = new TermStates[terms.length];
        for (int i = 0; i < terms.length; i++) {
            bytes[i] = new BytesRef(terms[i]);
            order[i] = i;
            states[i] = new TermStates(top);
        }
        Arrays.sort(order, (a, b) -> bytes[a].compareTo(bytes[b]));
        for (LeafReaderContext leaf : top.leaves()) {
            Terms dictionary = Terms.getTerms(leaf.reader(), field);
            TermsEnum seek = dictionary.iterator();
            for (int i : order) {
                if (seek.seekExact(bytes[i])) {
                    states[i].register(seek.termState(), leaf.ord, seek.docFreq(), seek.totalTermFreq());
                }
            }
        }
        return states;
    }
}

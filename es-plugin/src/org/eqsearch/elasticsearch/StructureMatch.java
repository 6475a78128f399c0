/*
 * eqsearch's Elasticsearch plugin: the query formula's sub-expressions, ready to be looked up per segment.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.util.BytesRef;

/**
 * The query's spans grouped by kind (their first letter: renamed, exact or generalised), each kind's spans ordered by
 * their credit, largest first. A span's credit is {@code (float) (weight * size / querySize)}: the boost eqsearch's
 * {@code constant_score} clause carried, computed the same way, so that a candidate's share of a kind (the largest
 * credit among the spans of that kind it holds: the {@code dis_max} with no tie breaker) is the same float.
 */
final class StructureMatch {
    private final BytesRef[][] spans; // [kind][span], by credit descending
    private final float[][] credits;

    private StructureMatch(BytesRef[][] spans, float[][] credits) {
        this.spans = spans;
        this.credits = credits;
    }

    static StructureMatch of(String[] spans, int[] sizes, int querySize, double weight) {
        Map<Character, List<Integer>> byKind = new LinkedHashMap<>();
        for (int i = 0; i < spans.length; i++) {
            byKind.computeIfAbsent(spans[i].charAt(0), k -> new ArrayList<>()).add(i);
        }
        BytesRef[][] kindSpans = new BytesRef[byKind.size()][];
        float[][] kindCredits = new float[byKind.size()][];
        int kind = 0;
        for (List<Integer> members : byKind.values()) {
            Integer[] order = members.toArray(new Integer[0]);
            float[] credit = new float[spans.length];
            for (int i : order) {
                credit[i] = (float) (weight * sizes[i] / querySize);
            }
            Arrays.sort(order, Comparator.comparingDouble((Integer i) -> -credit[i]).thenComparing(i -> spans[i]));
            kindSpans[kind] = new BytesRef[order.length];
            kindCredits[kind] = new float[order.length];
            for (int j = 0; j < order.length; j++) {
                kindSpans[kind][j] = new BytesRef(spans[order[j]].getBytes(StandardCharsets.UTF_8));
                kindCredits[kind][j] = credit[order[j]];
            }
            kind++;
        }
        return new StructureMatch(kindSpans, kindCredits);
    }

    /**
     * The shared sub-expressions of each of {@code docs} (segment-local ids, ascending): the sum over the kinds of the
     * largest credit of a span of that kind the document holds, in double as Lucene's disjunction sums its clauses;
     * {@code matched[i]} says whether document i holds any span at all.
     */
    double[] shares(LeafReader reader, String field, int[] docs, boolean[] matched) throws IOException {
        double[] sums = new double[docs.length];
        Terms terms = field == null ? null : reader.terms(field);
        if (terms == null) {
            return sums;
        }
        boolean[] found = new boolean[docs.length];
        TermsEnum termsEnum = terms.iterator();
        PostingsEnum postings = null;
        for (int kind = 0; kind < spans.length; kind++) {
            Arrays.fill(found, false);
            int open = docs.length;
            for (int s = 0; s < spans[kind].length && open > 0; s++) {
                if (termsEnum.seekExact(spans[kind][s]) == false) {
                    continue;
                }
                postings = termsEnum.postings(postings, PostingsEnum.NONE);
                for (int i = 0; i < docs.length; i++) {
                    if (found[i]) {
                        continue;
                    }
                    int at = postings.docID() < docs[i] ? postings.advance(docs[i]) : postings.docID();
                    if (at == PostingsEnum.NO_MORE_DOCS) {
                        break;
                    }
                    if (at == docs[i]) {
                        found[i] = true; // the largest credit of this kind: spans come largest first
                        matched[i] = true;
                        sums[i] += credits[kind][s];
                        open--;
                    }
                }
            }
        }
        return sums;
    }

    int spanCount() {
        int count = 0;
        for (BytesRef[] kind : spans) {
            count += kind.length;
        }
        return count;
    }
}

/*
 * eqsearch's Elasticsearch plugin: the formula search's structural rerank as a native rescorer.
 */
package org.eqsearch.elasticsearch;

import java.util.List;

import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.search.fetch.FetchSubPhase;
import org.elasticsearch.plugins.SearchPlugin;

/**
 * Registers the {@code eqsearch_structure} rescorer ({@link StructureRescorerBuilder}): it scores each candidate of a
 * rescore window by the largest sub-expressions it shares with the query formula, read from the index's span terms and
 * size doc values, the way eqsearch's {@code function_score} over {@code dis_max} of {@code constant_score} term
 * clauses did, in one pass over the window instead of one scorer per span; and the {@code eqsearch_maxsim} rescorer
 * ({@link MaxSimRescorerBuilder}): Amador and Zanibbi's MaxSim over node vectors stored with each equation; and the
 * {@code eqsearch_bm25} rescorer ({@link Bm25RescorerBuilder}): the BM25 of structural terms for each candidate of a
 * window, read from the equations' forward index instead of the posting lists; and the {@code eqsearch_terms} query
 * ({@link TermsQueryBuilder}): the structural list's first stage, its rare terms chosen in the shard ({@link RareTerms})
 * instead of by the client from a {@code _termvectors} request; and the {@code eqsearch_maxsim} search extension
 * ({@link MaxSimFetchBuilder}): each returned hit's MaxSim score in its fields, computed in the fetch phase
 * ({@link MaxSimFetchSubPhase}), so that the ranked lists bring it with them; and the {@code eqsearch_maxsim_window}
 * rescorer ({@link MaxSimWindowRescorerBuilder}), which limits that to each list's top hits. A request travels between
 * nodes in one form: every node of a cluster runs the one version the engine ships ({@code es-plugin/VERSION}).
 */
public class EqsearchPlugin extends Plugin implements SearchPlugin {
    @Override
    public List<QuerySpec<?>> getQueries() {
        return List.of(new QuerySpec<>(TermsQueryBuilder.NAME, TermsQueryBuilder::new, TermsQueryBuilder::fromXContent));
    }

    @Override
    public List<RescorerSpec<?>> getRescorers() {
        return List.of(
            new RescorerSpec<>(StructureRescorerBuilder.NAME, StructureRescorerBuilder::new, StructureRescorerBuilder::fromXContent),
            new RescorerSpec<>(MaxSimRescorerBuilder.NAME, MaxSimRescorerBuilder::new, MaxSimRescorerBuilder::fromXContent),
            new RescorerSpec<>(
                MaxSimWindowRescorerBuilder.NAME,
                MaxSimWindowRescorerBuilder::new,
                MaxSimWindowRescorerBuilder::fromXContent
            ),
            new RescorerSpec<>(Bm25RescorerBuilder.NAME, Bm25RescorerBuilder::new, Bm25RescorerBuilder::fromXContent)
        );
    }

    @Override
    public List<SearchExtSpec<?>> getSearchExts() {
        return List.of(new SearchExtSpec<>(MaxSimFetchBuilder.NAME, MaxSimFetchBuilder::new, MaxSimFetchBuilder::fromXContent));
    }

    @Override
    public List<FetchSubPhase> getFetchSubPhases(FetchPhaseConstructionContext context) {
        return List.of(new MaxSimFetchSubPhase());
    }
}

"""``scrapy evaluate QUESTIONS.jsonl [--source NAME] [-k 10] [--json]``: how often the index puts the right
page first, on your own questions.

Every question of the file (:mod:`docscraper.ops.evaluate` describes the format) is asked as ``scrapy search``
asks it; the command prints recall@1/3/5 and MRR@k, and each question whose answer did not come first, with
its rank and the page that came first. ``--json`` prints the same as one JSON object, valid against
``docscraper/schema/evaluation.schema.json``. Exit status 0; 2 for bad usage (``-k`` is from 1 to
:data:`docscraper.storage.search.MAX_K`, 1000) or a missing or malformed question file (its line, and what is
wrong with the question or an answer); 1 for no index, an empty one, an unknown source or a model that cannot load.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from scrapy.exceptions import UsageError

from docscraper.config import ConfigError
from docscraper.ops.cli import ToolCommand, whole_number

if TYPE_CHECKING:
    import argparse


class Command(ToolCommand):
    redact_output = False  # the documentation's own text
    json_help = "print one JSON object (docscraper/schema/evaluation.schema.json)"

    def syntax(self) -> str:
        return "QUESTIONS.jsonl [--source NAME] [-k N] [--json]"

    def short_desc(self) -> str:
        return "Score the index on a file of questions and the pages that answer them (recall@1/3/5, MRR)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        # imported here, not with the module: Scrapy imports every command module to list the commands
        from docscraper.storage.search import MAX_K

        super().add_options(parser)
        parser.add_argument("-k", type=whole_number(1, MAX_K), default=10, metavar="N",
                            help=f"results asked for per question, MRR@k (default 10, at most {MAX_K})")
        parser.add_argument("--source", help="only this source's pages")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1 or not args[0].strip():
            raise UsageError("give one question file: scrapy evaluate QUESTIONS.jsonl")
        if opts.source is not None and not opts.source.strip():
            raise UsageError("--source must name a source")
        # imported here, not with the module: Scrapy imports every command module to list the commands
        from docscraper.ops.evaluate import EvaluationError, QuestionFileError, evaluate_index, load_questions
        from docscraper.storage.embedding import EmbeddingError
        from docscraper.storage.errors import StateError
        from docscraper.storage.model_identity import ModelMismatch
        from docscraper.storage.vectors import IndexError_

        try:
            questions = load_questions(args[0])
        except QuestionFileError as exc:
            return self.fail(str(exc), 2)
        try:
            config = self.config()
            evaluation = evaluate_index(config, questions, k=opts.k, source=opts.source)
        except (ConfigError, EmbeddingError, EvaluationError, IndexError_, ModelMismatch, StateError) as exc:
            return self.fail(str(exc), 1)
        try:
            if opts.json:
                self.print_json({
                    "questionsFile": args[0],
                    "source": opts.source,
                    "settings": {
                        "dataDir": str(config.data_dir),
                        "collection": config.chroma_collection,
                        "embeddingModel": config.embedding_model,
                        "searchKeywordWeight": config.search_keyword_weight,
                    },
                    **evaluation.as_dict(),
                })
                return
            scored = len(evaluation.outcomes)
            print(f"{args[0]}: {scored} questions"
                  + (f" ({len(evaluation.unscored)} without answers, not scored)" if evaluation.unscored else "")
                  + f", {opts.k} results each" + (f", source {opts.source}" if opts.source else ""))
            print(evaluation.summary())
            misses = evaluation.miss_lines()
            if misses:
                print(f"not first ({len(misses)}):")
                print("\n".join(misses))
            sys.stdout.flush()
        except BrokenPipeError:  # `scrapy evaluate q.jsonl | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())

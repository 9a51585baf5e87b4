# tokenbridge: the CPU render/derender tier (vLLM 0.33 `vllm launch render` drop-in).
#   docker build -t tokenbridge .                      (add --build-arg EXTRAS=mistral for Mistral folders)
#   docker run -p 8000:8000 tokenbridge Qwen/Qwen3-8B --reasoning-parser qwen3 --tool-call-parser hermes
# The health check probes /health on port 8000: keep --port 8000 inside the container.
FROM python:3.11-slim AS wheel
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN pip wheel --no-cache-dir --no-deps -w /wheels .

FROM python:3.11-slim
ARG EXTRAS=""
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HOME=/home/tokenbridge/.cache/huggingface
COPY --from=wheel /wheels /wheels
RUN pip install --no-cache-dir "$(ls /wheels/tokenbridge-*.whl)${EXTRAS:+[$EXTRAS]}" \
 && rm -rf /wheels \
 && useradd --create-home --uid 10001 tokenbridge
USER 10001
WORKDIR /home/tokenbridge
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=2)"]
ENTRYPOINT ["tokenbridge", "serve", "--host", "0.0.0.0", "--port", "8000"]
